"""(being written)"""

__all__ = []
METHODS = []
