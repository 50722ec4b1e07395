"""Queries on the request path, compiled to SQL once per database.

Building a queryset and compiling it to SQL costs far more CPU than running
the statement (hundreds of µs against tens). The two statements every
request makes, the credential lookup and the audit INSERT, are written as
ordinary querysets, compiled once per database alias, and then only run:

- :class:`CompiledSelect` compiles a queryset whose changing values are
  placeholders, and turns each row back into model instances (related
  objects and annotations included) the way Django's own iterator does, with
  the same value converters;
- :class:`CompiledInsert` compiles a single-row INSERT and prepares each
  row's values with the fields' own ``pre_save`` and ``get_db_prep_save``,
  from a model instance or, cheaper still, from the values alone.

Both go through the connection's cursor, so execute wrappers, query logging
and ``assertNumQueries`` see every statement as usual.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import CharField, DateField, DateTimeField, Field, Model, QuerySet
from django.db.models.query import get_related_populators
from django.db.models.sql import InsertQuery

M = TypeVar("M", bound=Model)


class _Placeholder(str):
    """A value marking where a run's own value goes in the compiled params."""

    __slots__ = ()


@dataclass(frozen=True)
class _Plan:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, str], ...]
    compiler: Any
    model: type[Model]
    init_list: tuple[str, ...]
    model_slice: slice
    populators: tuple[Any, ...]
    annotations: tuple[tuple[str, int], ...]
    converters: dict[int, Any]


class CompiledSelect(Generic[M]):
    """``build(**placeholders)[:1]`` compiled once; ``first(**values)`` runs it.

    ``build`` receives one placeholder string per name and must use each in
    an exact-match filter (the value reaches the SQL parameters unchanged).
    The query is for at most one row (a unique key): its ordering is dropped.
    """

    def __init__(self, build: Callable[..., QuerySet[M]], *names: str) -> None:
        self._build = build
        self._names = names
        self._plans: dict[str, _Plan] = {}
        self._lock = threading.Lock()

    def first(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> M | None:
        plan = self._plans.get(using) or self._compile(using)
        params = list(plan.params)
        for index, name in plan.slots:
            params[index] = values[name]
        with connections[using].cursor() as cursor:
            cursor.execute(plan.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        return self._instance(plan, using, row)

    def _instance(self, plan: _Plan, using: str, raw: Sequence[Any]) -> M:
        row = raw
        if plan.converters:
            [row] = plan.compiler.apply_converters([raw], plan.converters)
        obj: M = plan.model.from_db(using, plan.init_list, row[plan.model_slice])  # type: ignore[assignment]
        for populator in plan.populators:
            populator.populate(row, obj)
        for name, position in plan.annotations:
            setattr(obj, name, row[position])
        return obj

    def _compile(self, using: str) -> _Plan:
        with self._lock:
            plan = self._plans.get(using)
            if plan is None:
                plan = self._plans[using] = self._plan(using)
            return plan

    def _plan(self, using: str) -> _Plan:
        marks = {name: _Placeholder(f"\x00compiled:{name}\x00") for name in self._names}
        queryset = self._build(**marks).order_by()[:1]  # one row: no sort
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        slots = tuple(
            (index, name)
            for index, value in enumerate(params)
            for name, mark in marks.items()
            if isinstance(value, str) and value == mark
        )
        missing = set(self._names) - {name for _, name in slots}
        if missing:
            raise ValueError(f"Placeholders not in the SQL parameters: {missing}")
        klass_info, select = compiler.klass_info, compiler.select
        fields = klass_info["select_fields"]
        start, end = fields[0], fields[-1] + 1
        return _Plan(
            sql=sql,
            params=tuple(params),
            slots=slots,
            compiler=compiler,
            model=klass_info["model"],
            init_list=tuple(f[0].target.attname for f in select[start:end]),
            model_slice=slice(start, end),
            populators=tuple(_populators(klass_info, select, using, queryset)),
            annotations=tuple(compiler.annotation_col_map.items()),
            converters=compiler.get_converters(
                [column[0] for column in select[: compiler.col_count]]
            ),
        )


# Django 6.1 added ``fetch_mode`` (the queryset's) to this private helper.
_POPULATORS_TAKE_FETCH_MODE = (
    "fetch_mode" in inspect.signature(get_related_populators).parameters
)


def _populators(
    klass_info: Any, select: Any, using: str, queryset: QuerySet[Any]
) -> list[Any]:
    """The related-object populators, as each supported Django builds them."""
    helper: Callable[..., list[Any]] = get_related_populators
    if _POPULATORS_TAKE_FETCH_MODE:
        return helper(klass_info, select, using, queryset._fetch_mode)  # type: ignore[attr-defined]
    return helper(klass_info, select, using)


class CompiledInsert(Generic[M]):
    """A one-row INSERT of ``model`` (every concrete field but the auto key).

    ``suffixes`` maps a database vendor to SQL appended to the statement on
    that vendor (a ``RETURNING`` clause); other vendors get the plain INSERT.
    """

    def __init__(
        self, model: type[M], suffixes: Mapping[str, str] | None = None
    ) -> None:
        self._model = model
        self._suffixes = dict(suffixes or {})
        self._fields: tuple[Field[Any, Any], ...] = tuple(
            f
            for f in model._meta.concrete_fields
            if not (f.primary_key and getattr(f, "db_returning", False))
        )
        self._plans: dict[str, tuple[str, Any]] = {}
        self._columns = tuple((f, f.attname, _kept_type(f)) for f in self._fields)
        self._computed = [f.name for f, _, kept in self._columns if kept is None]

    def insert(self, obj: M, using: str = DEFAULT_DB_ALIAS) -> None:
        """Write ``obj`` as a new row; its primary key stays unset."""
        sql, compiler = self._plan_for(obj, using)
        params = [
            compiler.prepare_value(field, compiler.pre_save_val(field, obj))
            for field in self._fields
        ]
        with connections[using].cursor() as cursor:
            cursor.execute(sql, params)

    def insert_values(
        self, values: Mapping[str, Any], using: str = DEFAULT_DB_ALIAS
    ) -> None:
        """Write the row :meth:`insert` writes of ``model(**values)``, without
        the instance: building one (its ``__init__``, its signals) costs
        more than preparing the values. ``values`` are keyed by attname
        (``tenant_id``); a field left out takes its default, as in
        ``__init__``.

        Raises:
            TypeError: a field computes its value when saved (``auto_now``,
                a file), which only an instance can give it.
        """
        sql, params = self.statement(values, using)
        with connections[using].cursor() as cursor:
            cursor.execute(sql, params)

    def statement(
        self, values: Mapping[str, Any], using: str = DEFAULT_DB_ALIAS
    ) -> tuple[str, list[Any]]:
        """The SQL and parameters :meth:`insert_values` sends (for a caller
        with a connection of its own: the audit row written from the loop).

        Raises:
            TypeError: as :meth:`insert_values`.
        """
        if self._computed:
            raise TypeError(f"Fields computed when saved: {self._computed}")
        sql, compiler = self._plans.get(using) or self._plan_for(
            self._model(**values), using
        )
        params = []
        for field, name, kept in self._columns:
            value = values[name] if name in values else field.get_default()
            if type(value) is not kept:
                value = compiler.prepare_value(field, value)
            params.append(value)
        return sql, params

    def _plan_for(self, obj: M, using: str) -> tuple[str, Any]:
        plan = self._plans.get(using)
        if plan is None:
            plan = self._plans.setdefault(using, self._plan(obj, using))
        return plan

    def _plan(self, obj: M, using: str) -> tuple[str, Any]:
        query = InsertQuery(self._model)
        query.insert_values(self._fields, [obj])
        compiler = query.get_compiler(using=using)
        [(sql, _)] = compiler.as_sql()
        return sql + self._suffixes.get(connections[using].vendor, ""), compiler


class _Prepared:
    """The type of no value: every value of the field is prepared."""


_KEPT_PRE_SAVES = {Field.pre_save, DateField.pre_save, DateTimeField.pre_save}


def _kept_type(field: Field[Any, Any]) -> type | None:
    """The type of value the field's preparation returns unchanged on every
    database, or ``None`` when its ``pre_save`` computes the value.

    A ``CharField``'s ``get_db_prep_save`` returns a ``str`` as it is (its
    ``to_python``); other fields' (dates, JSON, integers on PostgreSQL)
    convert, so their values always go through it.
    """
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return None
    if type(field).pre_save not in _KEPT_PRE_SAVES:
        return None
    return str if type(field) is CharField else _Prepared
