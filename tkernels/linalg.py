"""(placeholder: filled by its issue work)"""

__all__: list[str] = []
