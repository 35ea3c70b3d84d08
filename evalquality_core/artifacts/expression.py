"""The ``check`` grammar (AD-4) and its operand grammar: artifacts.md §2.1 and §2.3.

An :data:`Expression` is one of sixteen objects discriminated on ``op`` (11 operators, 3
connectives, 2 quantifiers). Fixed operand positions are exact: the wire carries a JSON array, the
model a ``list`` whose length is pinned by ``min_length``/``max_length`` (strict mode refuses a list
for a tuple). Which operand *kinds* an operator accepts is a compile check
(``malformed-operator-expression``), not a shape check, except ``set-membership``'s second operand,
which the published schema narrows and so do we.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from evalquality_core.artifacts.base import ArtifactModel, JsonValue, NonNegativeInt, Slug
from evalquality_core.registries import JsonTypeName

__all__ = [
    "BOUND_ELEMENT_POINTER_PATTERN",
    "DESCRIPTOR_POINTER_PATTERN",
    "INTERACTION_POINTER_PATTERN",
    "All",
    "Absence",
    "Any_",
    "BoundElementPointer",
    "Containment",
    "CountTolerance",
    "CoversByKey",
    "DeepEquality",
    "DescriptorPointer",
    "Equality",
    "Existence",
    "Expression",
    "ForAll",
    "ForAny",
    "InteractionPointer",
    "KeyShape",
    "LiteralOperand",
    "Not",
    "Operand",
    "Ordering",
    "PointerOperand",
    "ReferenceSetOperand",
    "Regex",
    "SetMembership",
    "Shape",
    "keyed_tag",
]

# --- Pointer grammars (AD-26, artifacts.md §2.1) -------------------------------------------------

_SLUG = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_TOKEN = r"(?:[^/~]|~[01])*"
_INTERACTION_BODY = (
    rf"\/interactions\/{_SLUG}\/(?:"
    rf"(?:response-body|response-headers|stdout|stderr)(?:\/{_TOKEN})*"
    r"|(?:response-status|exit-code)"
    rf"|call-inputs\/(?:path|query|header|body|argument|option|environment|stdin|arguments)(?:\/{_TOKEN})*"
    rf"|artifact\/{_SLUG}(?:\/{_TOKEN})*)"
)
_BOUND_BODY = rf"@(?:\/{_TOKEN})+"

#: ``/interactions/{stepId}/<channel>…`` — evidence pointers, captured bindings, rubric evidence.
INTERACTION_POINTER_PATTERN = rf"^{_INTERACTION_BODY}$"
#: ``@/…`` — the bound element of a quantifier (only inside a predicate; compile checks where).
BOUND_ELEMENT_POINTER_PATTERN = rf"^{_BOUND_BODY}$"
#: Plain RFC 6901 pointer relative to a response descriptor; ``""`` is the whole body.
DESCRIPTOR_POINTER_PATTERN = rf"^(?:\/{_TOKEN})*$"
_OPERAND_POINTER_PATTERN = rf"^(?:{_INTERACTION_BODY}|{_BOUND_BODY})$"

InteractionPointer = Annotated[str, Field(pattern=INTERACTION_POINTER_PATTERN)]
BoundElementPointer = Annotated[str, Field(pattern=BOUND_ELEMENT_POINTER_PATTERN)]
DescriptorPointer = Annotated[str, Field(pattern=DESCRIPTOR_POINTER_PATTERN)]
NonEmptyKey = Annotated[str, Field(min_length=1)]


def keyed_tag(*keys: str) -> Any:
    """A pydantic discriminator for unions of single-key objects: the tag is the key present.

    Used where the wire has no ``kind`` field (operands, binding values, input-binding forms). A
    value carrying none of ``keys`` yields no tag, which pydantic reports as an unmatched union.
    """

    def tag(value: Any) -> str | None:
        if isinstance(value, dict):
            for key in keys:
                if key in value:
                    return f"{key}-form"
            return None
        for key in keys:
            if key in getattr(type(value), "WIRE_KEYS", ()):
                return f"{key}-form"
        return None

    return Discriminator(
        tag,
        custom_error_type="union_tag_invalid_shape",
        custom_error_message=f"expected an object with exactly one of the keys {', '.join(keys)}",
    )


# --- KeyShape (artifacts.md §2.0) -------------------------------------------------------------


class KeyShape(ArtifactModel):
    """A key-shape descriptor: required and permitted key names and their declared JSON types.

    A key missing from ``types`` is "not declared"; an explicit ``None`` is "declared, type not
    stated". ``permitted_keys`` need not contain ``required_keys`` (a key in either is admitted).
    """

    required_keys: list[NonEmptyKey]
    permitted_keys: list[NonEmptyKey]
    types: dict[NonEmptyKey, JsonTypeName | None]


# --- Operands ---------------------------------------------------------------------------------


class PointerOperand(ArtifactModel):
    """``{"pointer": …}``: an interaction-rooted or bound-element pointer."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("pointer",)
    pointer: Annotated[str, Field(pattern=_OPERAND_POINTER_PATTERN)]


class LiteralOperand(ArtifactModel):
    """``{"literal": …}``: any JSON value, ``null`` included."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("literal",)
    literal: JsonValue


class ReferenceSetOperand(ArtifactModel):
    """``{"referenceSet": slug}``: a named reference set of the contract."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("referenceSet",)
    reference_set: Slug


#: Exactly one of pointer, literal, referenceSet.
Operand = Annotated[
    Annotated[PointerOperand, Tag("pointer-form")]
    | Annotated[LiteralOperand, Tag("literal-form")]
    | Annotated[ReferenceSetOperand, Tag("referenceSet-form")],
    keyed_tag("pointer", "literal", "referenceSet"),
]


def _operands(count: int) -> Any:
    return Field(min_length=count, max_length=count)


# --- Operators (11) ---------------------------------------------------------------------------


class Equality(ArtifactModel):
    """``equality``: two operands compared by JSON equality."""

    op: Literal["equality"]
    operands: Annotated[list[Operand], _operands(2)]


class DeepEquality(ArtifactModel):
    """``deep-equality``: two operands compared structurally."""

    op: Literal["deep-equality"]
    operands: Annotated[list[Operand], _operands(2)]


class Containment(ArtifactModel):
    """``containment``: ``[container, set]``."""

    op: Literal["containment"]
    operands: Annotated[list[Operand], _operands(2)]


class Existence(ArtifactModel):
    """``existence``: the pointer resolves."""

    op: Literal["existence"]
    operands: Annotated[list[Operand], _operands(1)]


class Absence(ArtifactModel):
    """``absence``: the pointer does not resolve."""

    op: Literal["absence"]
    operands: Annotated[list[Operand], _operands(1)]


class Regex(ArtifactModel):
    """``regex``: the operand matches an anchored ``^…$`` pattern."""

    op: Literal["regex"]
    operands: Annotated[list[Operand], _operands(1)]
    pattern: Annotated[str, Field(pattern=r"^\^[\s\S]*\$$")]


class SetMembership(ArtifactModel):
    """``set-membership``: ``[value, set]``; the set is a reference set or a non-empty literal array."""

    op: Literal["set-membership"]
    operands: Annotated[list[Operand], _operands(2)]

    @model_validator(mode="after")
    def _set_operand(self) -> SetMembership:
        """The schema narrows the second operand (artifacts.md §2.3)."""
        second = self.operands[1]
        if isinstance(second, ReferenceSetOperand):
            return self
        if isinstance(second, LiteralOperand) and isinstance(second.literal, list) and second.literal:
            return self
        raise ValueError("set-membership's second operand must be {referenceSet} or a non-empty {literal: [...]}")


class Ordering(ArtifactModel):
    """``ordering``: the collection at the operand is ordered by ``key``."""

    op: Literal["ordering"]
    operands: Annotated[list[Operand], _operands(1)]
    key: NonEmptyKey
    order: Literal["ascending", "descending"]


class CountTolerance(ArtifactModel):
    """``count-tolerance``: a collection's size within a tolerance (relative = whole percentage points)."""

    op: Literal["count-tolerance"]
    operands: Annotated[list[Operand], _operands(1)]
    expected: NonNegativeInt
    tolerance: NonNegativeInt
    relative: bool


class Shape(ArtifactModel):
    """``shape``: the value conforms to a closed key-shape descriptor."""

    op: Literal["shape"]
    operands: Annotated[list[Operand], _operands(1)]
    descriptor: KeyShape


class CoversByKey(ArtifactModel):
    """``covers-by-key``: ``[expected reference set, actual pointer]`` matched on the named keys."""

    op: Literal["covers-by-key"]
    operands: Annotated[list[Operand], _operands(2)]
    expected_key: NonEmptyKey
    actual_key: NonEmptyKey


# --- Connectives (3) and quantifiers (2) -------------------------------------------------------


class Not(ArtifactModel):
    """``not``: one sub-expression, negated."""

    op: Literal["not"]
    operands: Annotated[list[Expression], _operands(1)]


class All(ArtifactModel):
    """``all``: two or more sub-expressions, conjoined."""

    op: Literal["all"]
    operands: Annotated[list[Expression], Field(min_length=2)]


class Any_(ArtifactModel):
    """``any``: two or more sub-expressions, disjoined (named ``Any_`` to keep ``typing.Any`` free)."""

    op: Literal["any"]
    operands: Annotated[list[Expression], Field(min_length=2)]


class ForAll(ArtifactModel):
    """``for-all``: every element of ``collection`` satisfies ``predicate`` (no ``operands`` key)."""

    op: Literal["for-all"]
    collection: Operand
    predicate: Expression


class ForAny(ArtifactModel):
    """``for-any``: some element of ``collection`` satisfies ``predicate``."""

    op: Literal["for-any"]
    collection: Operand
    predicate: Expression


#: The sixteen-member check grammar, discriminated on ``op``.
Expression = Annotated[
    Equality
    | DeepEquality
    | Containment
    | Existence
    | Absence
    | Regex
    | SetMembership
    | Ordering
    | CountTolerance
    | Shape
    | CoversByKey
    | Not
    | All
    | Any_
    | ForAll
    | ForAny,
    Field(discriminator="op"),
]

for _model in (Not, All, Any_, ForAll, ForAny):
    _model.model_rebuild()
