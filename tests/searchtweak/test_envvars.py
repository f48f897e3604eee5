import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from searchtweak.envvars import (
    EmailSettings,
    env_bool,
    env_email_url,
    env_int,
    env_list,
    env_networks,
    env_url,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("raw", "expected"), [
    ("true", True), ("TRUE", True), ("1", True), ("on", True),
    ("false", False), ("0", False), ("Off", False), ("", True),
])
def test_env_bool_reads_the_accepted_spellings(raw, expected):
    assert env_bool("DEBUG", default=True, environ={"DEBUG": raw}) is expected


@pytest.mark.parametrize("raw", ["yes", "no", "2", "truthy"])
def test_env_bool_rejects_anything_else_naming_the_variable(raw):
    with pytest.raises(ImproperlyConfigured, match=rf"^DEBUG: '{raw}' is not a boolean"):
        env_bool("DEBUG", default=False, environ={"DEBUG": raw})


def test_env_int_rejects_text_and_values_below_minimum():
    assert env_int("N", 5, environ={}) == 5
    assert env_int("N", 5, minimum=1, environ={"N": "12"}) == 12
    with pytest.raises(ImproperlyConfigured, match=r"^N: 'ten' is not an integer"):
        env_int("N", 5, environ={"N": "ten"})
    with pytest.raises(ImproperlyConfigured, match=r"^N: 0 is less than the minimum 1"):
        env_int("N", 5, minimum=1, environ={"N": "0"})


def test_env_list_splits_on_commas_and_rejects_empty_items():
    assert env_list("H", ["x"], environ={"H": "a.example, b.example"}) == ["a.example", "b.example"]
    assert env_list("H", ["x"], environ={}) == ["x"]
    with pytest.raises(ImproperlyConfigured, match=r"^H: 'a,,b' has an empty item"):
        env_list("H", [], environ={"H": "a,,b"})


def test_env_networks_reads_cidr_and_bare_addresses_and_names_a_bad_one():
    assert env_networks("N", ["169.254.0.0/16"], environ={"N": "10.0.0.0/8, 127.0.0.2"}) == [
        ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("127.0.0.2/32")]
    assert env_networks("N", ["fe80::/10"], environ={}) == [ipaddress.ip_network("fe80::/10")]
    with pytest.raises(ImproperlyConfigured, match=r"^N: 'intranet' is not an IP network$"):
        env_networks("N", [], environ={"N": "10.0.0.0/8,intranet"})


def test_env_url_accepts_only_the_given_schemes():
    assert env_url("DATABASE_URL", schemes=("postgres",), environ={}) == ""
    url = "postgres://postgres@127.0.0.1:5432/x"
    assert env_url("DATABASE_URL", schemes=("postgres",), environ={"DATABASE_URL": url}) == url
    with pytest.raises(ImproperlyConfigured, match=r"^DATABASE_URL: 'mysql://h/db' must start"):
        env_url("DATABASE_URL", schemes=("postgres",), environ={"DATABASE_URL": "mysql://h/db"})


def _manage_check(**overrides: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DEBUG", "SECRET_KEY"}}
    env.update(overrides)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize(("overrides", "message"), [
    ({"DEBUG": "yes"}, "DEBUG: 'yes' is not a boolean"),
    ({"DEBUG": "false"}, "SECRET_KEY: must be set when DEBUG is false"),
    ({"CELERY_BROKER_URL": "amqp://guest@localhost//"}, "CELERY_BROKER_URL: 'amqp://"),
    ({"CELERY_TASK_TIME_LIMIT": "soon"}, "CELERY_TASK_TIME_LIMIT: 'soon' is not an integer"),
    ({"OUTBOUND_DENY_NETWORKS": "metadata"}, "OUTBOUND_DENY_NETWORKS: 'metadata' is not an IP"),
])
def test_bad_settings_stop_start_up_naming_the_variable(overrides, message):
    result = _manage_check(**overrides)
    assert result.returncode != 0
    assert message in result.stderr


def test_embedded_default_starts_with_no_environment_variables():
    result = _manage_check()
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_env_email_url_reads_an_smtp_server_with_starttls():
    email = env_email_url("EMAIL_URL", environ={
        "EMAIL_URL": "smtp://mailer%40example.test:p%3Ass@mail.example.test:587?tls=true"})
    assert email == EmailSettings(
        backend="django.core.mail.backends.smtp.EmailBackend", host="mail.example.test",
        port=587, username="mailer@example.test", password="p:ss", use_tls=True,
        use_ssl=False)


def test_env_email_url_defaults_the_port_by_scheme_and_reads_console():
    assert env_email_url("E", environ={"E": "smtp://relay"}).port == 25
    smtps = env_email_url("E", environ={"E": "smtps://u:p@relay"})
    assert (smtps.port, smtps.use_ssl, smtps.use_tls) == (465, True, False)
    assert env_email_url("E", environ={"E": "console://"}) == EmailSettings(
        backend="django.core.mail.backends.console.EmailBackend")
    assert env_email_url("E", environ={}) is None


@pytest.mark.parametrize("raw", ["http://mail.example.test", "mail.example.test:25",
                                 "sendmail://x"])
def test_env_email_url_rejects_another_scheme(raw):
    with pytest.raises(ImproperlyConfigured, match=r"^E: .* must start with one of smtp://"):
        env_email_url("E", environ={"E": raw})


@pytest.mark.parametrize("port", ["abc", "70000", "0", "-1"])
def test_env_email_url_rejects_a_bad_port_without_showing_the_password(port):
    with pytest.raises(ImproperlyConfigured, match=r"has a port that is not 1-65535") as caught:
        env_email_url("E", environ={"E": f"smtp://user:hunter2@mail.example.test:{port}"})
    assert "hunter2" not in str(caught.value) and "user:***@" in str(caught.value)


@pytest.mark.parametrize(("raw", "message"), [
    ("smtp://", "names no host"),
    ("smtp://relay?tls=yes", "'yes' is not a boolean"),
    ("smtp://relay?starttls=1", "unknown option 'starttls'"),
    ("smtps://relay?tls=true", "exclude each other"),
])
def test_env_email_url_rejects_other_mistakes(raw, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        env_email_url("E", environ={"E": raw})
