from django import forms
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import MaxLengthValidator

from audit.models import Action
from searchtweak.integers import ID_MAX, form_integer
from searchtweak.models import Role


class TeamForm(forms.Form):
    name = forms.CharField(max_length=100)


class InvitationForm(forms.Form):
    invitee = forms.CharField(
        max_length=254, label="Username or e-mail",
        widget=forms.TextInput(attrs={"placeholder": "jane or jane@example.com"}),
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.GRADER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class SwitchTeamForm(forms.Form):
    team = form_integer(min_value=1, max_value=ID_MAX)
    next = forms.CharField(required=False)


class RegisterForm(forms.Form):
    username = forms.RegexField(
        regex=r"^[\w.@+-]+\Z", max_length=150,
        error_messages={"invalid": "Use letters, digits and @/./+/-/_ only."},
    )
    password = forms.CharField(widget=forms.PasswordInput, min_length=8)


class AccountForm(forms.Form):
    first_name = forms.CharField(max_length=150, required=False)
    last_name = forms.CharField(max_length=150, required=False)


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, widget=forms.TextInput(
        attrs={"placeholder": "CI on main"}))


def add_service_errors(form: forms.Form, error: ValidationError) -> None:
    """Show a service's ValidationError({field: messages}) on the form: on the field when
    the form has it ("mapper.id" also finds mapper_id), else above the form, naming it."""
    for field, field_messages in error.message_dict.items():
        name = field if field in form.fields else "_".join(field.split(".")[:2])
        for message in field_messages:
            if name in form.fields:
                form.add_error(name, message)
            elif field == NON_FIELD_ERRORS:
                form.add_error(None, message)
            else:
                form.add_error(None, f"{field}: {message}")


class AuditFilterForm(forms.Form):
    """The audit page's filters (GET): every field optional."""

    action = forms.ChoiceField(required=False, choices=[("", "Any action"), *Action.choices])
    actor = forms.CharField(required=False, max_length=150, label="Username")
    since = forms.DateField(required=False, label="From")
    until = forms.DateField(required=False, label="To")

    def clean(self):
        cleaned = super().clean()
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and since > until:
            raise ValidationError({"until": "The last day comes before the first."})
        return cleaned


class LoginForm(AuthenticationForm):
    """Django's login form with its username length enforced. AuthenticationForm sets the
    field's max_length after building it, so no validator checks it: a longer name reached
    authenticate(), and django-axes' record of the failure (a 255-character column) could
    not store it (a 500 on PostgreSQL)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["username"]
        field.validators.append(MaxLengthValidator(field.max_length))
