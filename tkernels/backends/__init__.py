"""Backends: ``numpy`` (cpu) and ``triton`` (cuda). Each registers op implementations with
``tkernels.dispatch.register``; the dispatcher imports a backend the first time its device is used."""
