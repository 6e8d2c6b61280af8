"""``python -m kvplan validate``: registered here; torch is imported only when it runs."""


def add_commands(sub) -> None:
    return None
