"""Typed errors. Every user-facing failure is one of these, and each names its field.

The CLI prints ``error: <field>: <message>`` and exits 2; the web pages show the same text
beside the widget. Nothing else in kvplan raises on bad *input* (bugs may still assert).
"""


class KvplanError(ValueError):
    """Bad input: ``field`` names what is wrong (a config key, a CLI flag, a URL parameter)."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class ConfigError(KvplanError):
    """A model config (config.json) that cannot be planned."""


class PlanInputError(KvplanError):
    """A workload, GPU or engine setting outside what is allowed."""
