"""Let the admin and form classes the stubs call generic be subscripted.

django-stubs types ``ModelAdmin``, the inlines, ``ModelForm`` and the
formsets as generic
(``admin.ModelAdmin[Tenant]``), but Django's own classes have no
``__class_getitem__``, so such a base class fails at import time unless
something adds it (``django_stubs_ext.monkeypatch()``, a development tool).
The app must import on a site without any development tool, so it adds
that one method itself, as ``django_stubs_ext`` would: subscripting returns
the class unchanged. Classes that already have it (DRF's, ``QuerySet``,
``Manager``; any a site's own patching added) are left alone.

Every module of the app that subscripts one of these classes at runtime
imports this module first (``mcp_gateway.admin`` and ``mcp_gateway.forms``).
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.options import BaseModelAdmin
from django.forms.formsets import BaseFormSet
from django.forms.models import BaseModelForm


def _same_class(cls: type, *args: Any, **kwargs: Any) -> type:
    return cls


def make_subscriptable(*classes: type) -> None:
    """Give each class (and so its subclasses) a no-op ``__class_getitem__``."""
    for cls in classes:
        if not hasattr(cls, "__class_getitem__"):
            cls.__class_getitem__ = classmethod(_same_class)  # type: ignore[attr-defined]


make_subscriptable(BaseModelAdmin, BaseModelForm, BaseFormSet)
