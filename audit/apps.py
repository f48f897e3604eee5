from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_login_failed

        from audit import receivers

        # Django's login view (not a service of ours) is the sender: the dependency
        # points the other way, so these two are receivers (docs/ARCHITECTURE.md).
        user_logged_in.connect(receivers.on_user_logged_in,
                               dispatch_uid="audit.on_user_logged_in")
        user_login_failed.connect(receivers.on_user_login_failed,
                                  dispatch_uid="audit.on_user_login_failed")
