from django import forms

from sharing.services import MAX_DAYS


class ShareLinkForm(forms.Form):
    days = forms.IntegerField(min_value=1, max_value=MAX_DAYS, initial=14,
                              label="Open for (days)")


class ShareTargetForm(forms.Form):
    """What to share, from the query string: one evaluation's dashboard, or B against A."""

    evaluation = forms.IntegerField(required=False, min_value=1)
    a = forms.IntegerField(required=False, min_value=1)
    b = forms.IntegerField(required=False, min_value=1)

    def clean(self):
        data = super().clean()
        if not data.get("evaluation") and not (data.get("a") and data.get("b")):
            raise forms.ValidationError("Name an evaluation, or A and B to compare.")
        return data
