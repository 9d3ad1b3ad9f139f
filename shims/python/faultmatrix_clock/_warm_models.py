"""Pydantic models a warm child built, built once by its parent instead.

pydantic (v2) can defer building a model's validator until the model is
first used (`defer_build`), and the openai and anthropic SDKs defer every
one of theirs (`DEFER_PYDANTIC_BUILD`, default true): importing is cheaper,
and each process builds what it uses when it first parses a response. A
warm parent's children are fresh forks, so every row built the same models
again: profiled on the anthropic SDK 2.15.0 (pydantic 2.14), schema
generation was 55 of a streamed row's 80 ms from its first request to its
end, 35 of them for the eight models the row parsed and the rest for the
union members behind the SDK's `TypeAdapter`s.

So, like `exit.imported` for modules (shims/PROTOCOL.md §8), a warm child
notes every model class pydantic generates a schema for while its row runs
(`GenerateSchema._model_schema`, which both a model's own build and a
`TypeAdapter` over a union of models go through) and reports the ones a
parent can find by name in `exit.imported`, as `module:qualname` (or
`module:Origin[module:Arg|module:Arg]` for a parametrized generic model).
The parent builds them (`model_rebuild(raise_errors=False)`) before its
next fork, so the next rows find them complete: a model built earlier is
the model it would have built later (the same class, the same modules
loaded). A model whose references do not resolve in the parent stays
deferred and the child builds it as before.

Only models defined in modules from the standard library or site-packages
are reported (a parent never imports the program's own modules), and a
parent never imports a module to find a model: the module must be loaded
already (the row's modules are reported, and preloaded, before its models).
Without pydantic, or with internals that differ, nothing is noted and
nothing changes.
"""

import sys

_seen = None  # the classes this child generated a schema for
_kept = []  # parametrized generics built by a parent (pydantic caches them weakly)


def record():
    """In a warm child, from now on: note each model pydantic builds."""
    global _seen
    gs = sys.modules.get("pydantic._internal._generate_schema")
    generate = getattr(gs, "GenerateSchema", None)
    original = getattr(generate, "_model_schema", None)
    if original is None or getattr(original, "_faultmatrix_original", None) is not None:
        return
    seen = set()

    def _model_schema(self, cls, *args, **kwargs):
        seen.add(cls)
        return original(self, cls, *args, **kwargs)

    _model_schema._faultmatrix_original = original
    generate._model_schema = _model_schema
    _seen = seen


def _plain(obj, outside):
    if obj is type(None):
        return "builtins:NoneType"
    if not isinstance(obj, type):
        return None
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not module or not qualname or "<" in qualname or "[" in qualname:
        return None
    if module != "builtins" and not outside(module):
        return None
    if _resolve(f"{module}:{qualname}") is not obj:
        return None
    return f"{module}:{qualname}"


def _ref(cls, outside):
    meta = getattr(cls, "__pydantic_generic_metadata__", None) or {}
    origin = meta.get("origin")
    if origin is None:
        return _plain(cls, outside)
    base = _plain(origin, outside)
    args = [_plain(a, outside) for a in meta.get("args") or ()]
    if base is None or not args or not all(args):
        return None
    return f"{base}[{'|'.join(args)}]"


def built(outside):
    """What this child built that a parent can build by name (sorted)."""
    out = set()
    for cls in list(_seen or ()):
        try:
            ref = _ref(cls, outside)
        except Exception:  # an odd class: not reported
            ref = None
        if ref is not None:
            out.add(ref)
    return sorted(out)


def is_model_ref(name):
    return ":" in name


def _resolve(ref):
    if ref == "builtins:NoneType":
        return type(None)
    module, _, qualname = ref.partition(":")
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def prepare(ref):
    """In a warm parent: builds the model `ref` names. True when it is now
    built; False when it is not found or stays deferred."""
    try:
        base, _, args = ref.partition("[")
        cls = _resolve(base)
        if cls is None:
            return False
        if args:
            params = tuple(_resolve(a) for a in args.rstrip("]").split("|"))
            if any(p is None for p in params):
                return False
            cls = cls[params if len(params) > 1 else params[0]]
            _kept.append(cls)
        rebuild = getattr(cls, "model_rebuild", None)
        if rebuild is None:
            return False
        rebuild(raise_errors=False)
        return bool(getattr(cls, "__pydantic_complete__", False))
    except Exception:  # the child builds it, and fails, as the program would
        return False
