from django.db import migrations, models


def encrypt_sensitive_model_headers(apps, schema_editor) -> None:
    """Move the model headers whose names look secret (Authorization, X-Api-Key, …) out of
    the plain JSON column into the encrypted one, as the services now store them."""
    from evaluations import crypto

    SearchModel = apps.get_model("evaluations", "SearchModel")
    for model in SearchModel.objects.exclude(headers={}).only("headers").iterator():
        secrets = {name: value for name, value in model.headers.items()
                   if crypto.looks_secret(name)}
        if not secrets:
            continue
        model.headers = {name: value for name, value in model.headers.items()
                         if name not in secrets}
        model.secret_headers_encrypted = crypto.encrypt_headers(secrets)
        model.save(update_fields=["headers", "secret_headers_encrypted"])


def decrypt_sensitive_model_headers(apps, schema_editor) -> None:
    from evaluations import crypto

    SearchModel = apps.get_model("evaluations", "SearchModel")
    for model in SearchModel.objects.exclude(secret_headers_encrypted="").iterator():
        try:
            secrets = crypto.decrypt_headers(model.secret_headers_encrypted)
        except crypto.SecretsUnreadable:
            secrets = {}
        model.headers = {**model.headers, **secrets}
        model.save(update_fields=["headers"])


class Migration(migrations.Migration):

    dependencies = [
        ("evaluations", "0003_endpoint_outbound_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="searchmodel",
            name="secret_headers_encrypted",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(encrypt_sensitive_model_headers, decrypt_sensitive_model_headers),
    ]
