from django.apps import AppConfig


class JudgmentsConfig(AppConfig):
    name = "judgments"

    def ready(self) -> None:
        from evaluations.hooks import ScaleProvider, register_scale_provider
        from evaluations.signals import snapshots_created
        from judgments import receivers, scales

        snapshots_created.connect(
            receivers.on_snapshots_created, dispatch_uid="judgments.snapshots_created"
        )
        # Team scales and transformers live here; evaluations asks through this provider.
        register_scale_provider(ScaleProvider(
            choices=scales.provider_choices,
            bounds=scales.provider_bounds,
            transformers=scales.provider_transformers,
        ))
