"""The judges' building blocks without Django: provider protocols, sending, prompts,
answer validation and cache keys. The app (models, tasks, pages) wraps these; the
agreement figures of calibration live with the other statistics in metrics_engine.agreement.
"""
