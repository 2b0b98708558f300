"""Unit checking of the flat equations with pint (``mb.compile(model, check_units=True)``).

Every variable and parameter may declare a unit (Modelica's syntax: ``"N.m"``, ``"m/s2"``,
``"m3/(s.Pa)"``; a derivative has its variable's unit per second, time is in seconds).
Walking each equation's residual (``lhs - rhs``), each parameter's binding
(``Spring(c=self.m*self.g)`` must have the unit declared for ``c``), each relation that
makes events (``x > x_max``), when condition, discrete equation, when assignment and
reinit, the two sides of every sum, difference, comparison, ``fmin``/``fmax``/``atan2``
must have the same unit, and the arguments of ``sin``, ``exp``, ``log``, ... must be
dimensionless (and so are their results: ``y = sin(w*t)`` with ``y`` in volts lacks an
amplitude). Units are compared exactly, scale included: ``kPa`` and ``Pa`` disagree,
because the equations convert nothing.

Numbers written in an equation have no unit of their own: in a sum they take the unit of
the other side. In a product or quotient, a number that reads as a pure scale (an integer
up to 100 or its reciprocal, a fraction p/q with q up to 12, possibly times pi:
``3*c*s^2`` has the unit of ``c*s^2``, ``2*pi*f*time`` is a pure number, ``0.4*m*r^2`` a
moment of inertia) keeps the unit of what it scales, so a period written as
``time/4`` is a mismatch (declare it: ``T = Parameter(4.0, unit="s")``, ``time/T``). Any
other number may stand for a quantity written without its unit (``101325``, ``1.5e9``),
as Modelica tools would infer, and the product is not checked. Not checked is anything
computed from a variable or parameter declared without a unit, or a power with a variable
exponent (``c * d^n``: the unit of ``c`` depends on ``n``).

Example::

    cm = mb.compile(model, check_units=True)   # raises mb.UnitError naming the equations
"""

from __future__ import annotations

import math
import re

import casadi as ca

from .errors import DeclarationError

__all__ = ["check_units", "UnitError", "pint_unit", "modelica_unit_problem", "SYMBOLS"]

#: How many disagreeing equations a UnitError lists.
SHOWN = 10


class UnitError(DeclarationError):
    """Equations whose two sides (or the terms of a sum) have different units; ``problems``
    lists ``(origin, equation text, explanation)``."""

    problems: list = []


#: pint's name of each symbol: pint reads some symbols otherwise ("kt" is a knot, not a
#: kilotonne; "mcd" a micro-day, not a millicandela; it has no "rev")
_NAMES = {
    "m": "meter", "s": "second", "g": "gram", "A": "ampere", "K": "kelvin", "mol": "mole",
    "cd": "candela", "rad": "radian", "sr": "steradian", "Hz": "hertz", "N": "newton",
    "Pa": "pascal", "J": "joule", "W": "watt", "C": "coulomb", "V": "volt", "F": "farad",
    "Ohm": "ohm", "S": "siemens", "Wb": "weber", "T": "tesla", "H": "henry", "lm": "lumen",
    "lx": "lux", "Bq": "becquerel", "Gy": "gray", "Sv": "sievert", "kat": "katal",
    "var": "volt_ampere", "degC": "kelvin", "min": "minute", "h": "hour", "d": "day",
    "l": "liter", "L": "liter", "bar": "bar", "eV": "electron_volt", "ha": "hectare",
    "t": "metric_ton", "deg": "degree", "rev": "revolution"}
_TOKEN = re.compile(r"([A-Za-z_]+)([+-]?\d+)?")

#: Unit symbols a Modelica unit string may use (SI base and derived units, and the
#: units accepted for use with them), each with or without a decimal prefix.
SYMBOLS = frozenset(
    "m s g A K mol cd rad sr Hz N Pa J W C V F Ohm S Wb T H lm lx Bq Gy Sv kat var degC "
    "min h d l L bar eV ha t deg rev".split())
#: Symbols that take a decimal prefix (degC, min, h, d, deg, rev and ha do not).
_PREFIXABLE = SYMBOLS - frozenset("degC min h d deg rev ha".split())
_PREFIXES = ("da", "Y", "Z", "E", "P", "T", "G", "M", "k", "h", "d", "c", "m", "u", "p",
             "f", "a", "z", "y")
_PREFIX_NAMES = dict(zip(_PREFIXES, ("deca", "yotta", "zetta", "exa", "peta", "tera",
                                      "giga", "mega", "kilo", "hecto", "deci", "centi",
                                      "milli", "micro", "pico", "femto", "atto", "zepto",
                                      "yocto")))
_SYNTAX = re.compile(r"[A-Za-z]+(?:[+-]?\d+)?|\d+|[./()]")


def _split(word: str) -> tuple[str, str] | None:
    """``(prefix, symbol)`` of a unit word (``"kOhm"`` -> ``("k", "Ohm")``, ``"m"`` ->
    ``("", "m")``), or None if it is no Modelica unit symbol."""
    if word in SYMBOLS:
        return "", word
    for prefix in _PREFIXES:
        if word.startswith(prefix) and word[len(prefix):] in _PREFIXABLE:
            return prefix, word[len(prefix):]
    return None


def modelica_unit_problem(text: str) -> str | None:
    """Why ``text`` is not a unit in Modelica's syntax (factors joined by ``.``, one ``/``,
    integer exponents written after the symbol: ``"N.m"``, ``"m/s2"``, ``"m3/(s.Pa)"``,
    ``"1/K"``; symbols from :data:`SYMBOLS` with decimal prefixes), or None if it is one.

    Example: ``modelica_unit_problem("meter/sec")`` says ``'meter'`` is no unit symbol."""
    tokens = _SYNTAX.findall(text)
    if "".join(tokens) != text:
        bad = next((ch for ch in text if not (ch.isascii() and (ch.isalnum() or ch in "./()"))),
                   None)
        if bad is None:
            return f"{text!r} is not in Modelica's unit syntax (a sign needs its exponent)"
        return (f"{bad!r} is not part of Modelica's unit syntax (ASCII unit symbols, integer "
                f"exponents, '.' and '/')")
    for token in tokens:
        exponent = re.fullmatch(r"[A-Za-z]+([+-]?\d+)", token)
        if exponent and int(exponent.group(1)) == 0:
            return f"{token!r}: an exponent of 0 leaves no unit; leave the factor out"
    position = 0

    def expression():  # numerator ["/" denominator]
        nonlocal position
        problem = factors(numerator=True)
        if problem is None and position < len(tokens) and tokens[position] == "/":
            position += 1
            problem = factors(numerator=False)
        return problem

    def factors(numerator):
        nonlocal position
        if position < len(tokens) and tokens[position] == "(":
            position += 1
            problem = expression()
            if problem is None and (position >= len(tokens) or tokens[position] != ")"):
                problem = "a '(' is not closed"
            position += 1
            return problem
        if numerator and position < len(tokens) and tokens[position] == "1":
            position += 1
            return None
        while True:
            if position >= len(tokens) or not tokens[position][0].isalpha():
                return "a unit symbol is missing"
            word = re.match(r"[A-Za-z]+", tokens[position]).group()
            if _split(word) is None:
                return f"{word!r} is not a unit symbol (e.g. 'm', 's', 'kg', 'N', 'Pa', 'V')"
            position += 1
            if not numerator or position >= len(tokens) or tokens[position] != ".":
                return None
            position += 1

    problem = expression()
    if problem is None and position != len(tokens):
        problem = f"{''.join(tokens[position:])!r} is left over (one '/' at most; group a " \
                  f"denominator in parentheses: 'm3/(s.Pa)')"
    return problem


def pint_unit(text: str, registry):
    """The pint unit of a Modelica unit string (``"N.m/rad"``, ``"m3/(s.Pa)"``, ``"1/K"``).
    A string outside Modelica's syntax is a ValueError, even one pint would read.

    Example: ``pint_unit("kg.m2", ureg)`` is ``kg·m²``"""
    if not text or text == "1":
        return registry.dimensionless
    problem = modelica_unit_problem(text)
    if problem is not None:
        raise ValueError(problem)

    def name(match):
        word, power = match.group(1), match.group(2)
        prefix, symbol = _split(word)  # the syntax is checked above
        # by name, prefix and symbol apart: "kOhm" -> "kiloohm", "mcd" -> "millicandela"
        word = (_PREFIX_NAMES[prefix] if prefix else "") + _NAMES[symbol]
        return f"({word})**{int(power)}" if power else f"({word})"
    expression = _TOKEN.sub(name, text).replace(".", "*")
    return registry.parse_units(expression)


class _Free:
    """A written number that is a pure scale (:func:`_pure_scale`): takes the unit of the
    other side of a sum; keeps the unit of what it multiplies or divides."""


class _Literal:
    """Any other written number: takes the unit of the other side of a sum; in a product
    or quotient it may stand for a quantity (101325 for 1 atm, 1.5e9 for a bulk modulus),
    so the product's unit is not known."""


_FREE, _LITERAL = _Free(), _Literal()


def _number(unit) -> bool:
    return unit is _FREE or unit is _LITERAL


def _pure_scale(value: float) -> bool:
    """Whether a written number reads as a pure scale: 0, an integer up to 100 or its
    reciprocal, a fraction p/q with q up to 12 (0.4, 2/3, 1.5), each possibly times pi
    (3 in ``3*c*s^2``, ``0.4*m*r^2``, ``4/3*pi*r^3``, ``2*pi*f``). Other numbers are taken
    for quantities written without their unit."""
    magnitude = abs(value)
    if magnitude == 0.0:
        return True
    for candidate in (magnitude, magnitude / math.pi):
        whole = round(1.0 / candidate)
        if 1 <= whole <= 100 and abs(1.0 / candidate - whole) <= 1e-12 * whole:
            return True
        for q in range(1, 13):
            p = round(candidate * q)
            if 1 <= p <= 100 * q and abs(candidate * q - p) <= 1e-12 * p:
                return True
    return False
_UNKNOWN = None  # a variable or parameter without unit: nothing is checked through it

def _ops(*names) -> set:
    return {getattr(ca, f"OP_{n}") for n in names if hasattr(ca, f"OP_{n}")}


_SAME = _ops("ADD", "SUB", "FMIN", "FMAX", "LT", "LE", "EQ", "NE", "ATAN2")
_KEEP = _ops("NEG", "FABS")
_DIMENSIONLESS_IN = _ops("SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN", "EXP", "LOG", "SINH",
                         "COSH", "TANH", "ASINH", "ACOSH", "ATANH", "ERF", "LOG1P", "EXPM1")
_NUMBER_OUT = _ops("SIGN", "NOT", "AND", "OR", "LT", "LE", "EQ", "NE", "FLOOR", "CEIL")


class _Mismatch(Exception):
    def __init__(self, text):
        super().__init__(text)
        self.text = text


def check_units(flat) -> list:
    """``(origin, equation, explanation)`` of every flat equation (and initial equation,
    and parameter binding) whose units disagree; raises :class:`UnitError` listing them if there are any. Needs
    pint (``pip install 'mbmodel[units]'``)."""
    try:
        import pint
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("check_units=True needs pint: pip install 'mbmodel[units]'") from exc
    registry = pint.UnitRegistry()
    known = {}
    bad_units = []
    for var in flat.variables:
        unit = var.unit
        if not unit and var.derivative_of is not None:
            base = flat.variables[var.derivative_of].unit
            # a base unit that is not understood is reported once, for the variable
            unit = f"({base})/s" if base and modelica_unit_problem(base) is None else ""
        known[var.symbol.element_hash()] = (var.name, unit)
    for par in flat.parameters:
        known[par.symbol.element_hash()] = (par.name, par.unit)
    from .core import time
    known[time.element_hash()] = ("time", "s")
    units = {}
    for key, (name, text) in known.items():
        if not text:
            units[key] = _UNKNOWN
            continue
        try:
            units[key] = pint_unit(text, registry)
        except ValueError as exc:
            bad_units.append(f"{name}: unit {text!r} is not understood: {exc}")
            units[key] = _UNKNOWN
        except Exception:  # noqa: BLE001 - pint's parse errors vary
            bad_units.append(f"{name}: unit {text!r} is not understood")
            units[key] = _UNKNOWN
    checker = _Checker(units, registry)
    problems = []
    for eq in list(flat.equations) + list(flat.initial_equations):
        try:
            checker.equation(eq.residual)
        except _Mismatch as mismatch:
            problems.append((eq.origin, eq.description, mismatch.text))
    for par in flat.parameters:
        # a binding (Spring(c=self.m*self.g)) is an equation too: par == binding
        if par.binding is None or not par.unit:
            continue
        declared = units[par.symbol.element_hash()]
        try:
            bound = checker.unit(par.binding)
            if (bound is _UNKNOWN or _number(bound) or declared is _UNKNOWN
                    or checker.same(declared, bound)):
                continue
            why = (f"{par.name} is declared in {_show(declared)}, and its binding has "
                   f"unit {_show(bound)}")
        except _Mismatch as mismatch:
            why = mismatch.text
        problems.append((par.origin, f"{par.name} = {_text(par.binding)}", why))
    problems += _hybrid_problems(flat, checker, units)
    if problems or bad_units:
        lines = [f"  in {origin or 'the model itself'}: {text}\n      {why}"
                 for origin, text, why in problems[:SHOWN]]
        more = len(problems) - SHOWN
        if more > 0:
            lines.append(f"  ... and {more} more")
        lines += [f"  {b}" for b in bad_units]
        found = [f"{len(problems)} equation(s) whose units disagree"] if problems else []
        found += [f"{len(bad_units)} unit(s) not understood"] if bad_units else []
        error = UnitError(f"{flat.name}: {' and '.join(found)}:\n" + "\n".join(lines))
        error.problems = problems
        raise error
    return problems


def _hybrid_problems(flat, checker, units) -> list:
    """Relations (``x > x_max``), when conditions, discrete equations and when clauses'
    assignments and reinits, checked as the continuous equations are."""
    hybrid = flat.hybrid
    problems = []

    def walk(origin, shown, expression):
        try:
            checker.equation(expression)
        except _Mismatch as mismatch:
            problems.append((origin, shown, mismatch.text))

    def assigned(origin, what, position, value):
        variable = flat.variables[position]
        declared = units.get(variable.symbol.element_hash(), _UNKNOWN)
        try:
            value_unit = checker.unit(ca.SX(value))
        except _Mismatch as mismatch:
            problems.append((origin, f"{what} {variable.name} := {_text(value)}",
                             mismatch.text))
            return
        if (declared is _UNKNOWN or value_unit is _UNKNOWN or _number(value_unit)
                or checker.same(declared, value_unit)):
            return
        problems.append((origin, f"{what} {variable.name} := {_text(value)}",
                         f"{variable.name} is declared in {_show(declared)}, and the value "
                         f"has unit {_show(value_unit)}"))

    for relation in hybrid.relations:
        walk(relation.origin, relation.description, relation.literal)
    for when in hybrid.whens:
        for condition in when.conditions:
            walk(when.origin, when.shown, condition)
        for position, value in when.assignments:
            assigned(when.origin, "when:", position, value)
        for position, value in when.reinits:
            assigned(when.origin, "reinit:", position, value)
    for equation in hybrid.discrete_equations:
        assigned(equation.origin, "discrete:", equation.target, equation.value)
    return problems


class _Checker:
    def __init__(self, units, registry):
        self.units = units
        self.registry = registry
        self.memo = {}
        self.compared = {}

    def equation(self, residual):
        residual = ca.SX(residual)
        for k in range(residual.numel()):
            element = residual[k]
            if element.is_constant():
                continue
            node = element
            if node.n_dep() == 2 and node.op() == ca.OP_SUB:  # lhs - rhs: say both sides
                left, right = self.unit(node.dep(0)), self.unit(node.dep(1))
                self.join(left, right, node, "the two sides")
            else:
                self.unit(node)

    def unit(self, node):
        key = node.element_hash()
        if key in self.memo:
            return self.memo[key]
        result = self._unit(node)
        self.memo[key] = result
        return result

    def _unit(self, node):
        if node.is_constant():
            return _FREE if _pure_scale(float(node)) else _LITERAL
        if node.is_symbolic():
            return self.units.get(node.element_hash(), _UNKNOWN)
        op = node.op()
        args = [self.unit(node.dep(i)) for i in range(node.n_dep())]
        if op in _SAME:
            joined = self.join(args[0], args[1], node, "the terms")
            if op == ca.OP_ATAN2:
                return self.registry.radian
            return _FREE if op in _NUMBER_OUT else joined
        if op in _KEEP:
            return args[0]
        if op in (ca.OP_MUL, ca.OP_DIV):
            a, b = args
            if _number(a) and _number(b):
                return _LITERAL if (a is _LITERAL or b is _LITERAL) else _FREE
            if a is _UNKNOWN or b is _UNKNOWN or (a is _LITERAL or b is _LITERAL):
                return _UNKNOWN
            # a number scales a quantity and keeps its unit (3*c*s^2 is checked as c*s^2;
            # it used to make the whole product unknown, so a factor other than 2, which
            # casadi keeps as its own operation, hid any unit error around it)
            if b is _FREE:
                return a
            if a is _FREE:
                return b if op == ca.OP_MUL else 1 / b
            return a * b if op == ca.OP_MUL else a / b
        if op in (ca.OP_SQ, ca.OP_TWICE, ca.OP_SQRT, ca.OP_INV):
            a = args[0]
            if a is _UNKNOWN or _number(a):
                return a
            return {ca.OP_SQ: a ** 2, ca.OP_TWICE: a, ca.OP_SQRT: a ** 0.5,
                    ca.OP_INV: 1 / a}[op]
        if op in (ca.OP_POW, ca.OP_CONSTPOW):
            base = args[0]
            power = node.dep(1)
            if base is _UNKNOWN or _number(base):
                return base
            if power.is_constant():
                return base ** float(power)
            return _UNKNOWN
        if op in _DIMENSIONLESS_IN:
            self.dimensionless(args[0], node, "the argument")
            # a pure number: y = sin(w*t) with y in volts lacks its amplitude
            return _FREE if _number(args[0]) else self.registry.dimensionless
        if op in _NUMBER_OUT:
            return _FREE
        if op == ca.OP_IF_ELSE_ZERO:
            return args[1]
        return _UNKNOWN  # anything else (a call, a lookup table) is not checked

    def same(self, a, b) -> bool:
        # pint's arithmetic costs ~0.1 ms; a model repeats few unit pairs many times.
        key = (a, b)
        if key not in self.compared:
            self.compared[key] = _same(a, b, self.registry)
        return self.compared[key]

    def join(self, a, b, node, what):
        if a is _UNKNOWN or b is _UNKNOWN:
            return _UNKNOWN
        if _number(a):
            return b
        if _number(b):
            return a
        if not self.same(a, b):
            raise _Mismatch(f"{what} of {_text(node)} have units {_show(a)} and {_show(b)}")
        return a

    def dimensionless(self, unit, node, what):
        if unit is _UNKNOWN or _number(unit):
            return
        if not self.same(unit, self.registry.dimensionless):
            raise _Mismatch(f"{what} of {_text(node)} has unit {_show(unit)}, not a pure "
                            f"number")


def _same(a, b, registry) -> bool:
    """Same dimension and the same scale (kPa is not Pa: the equations convert nothing)."""
    quotient = (1 * a / b).to_base_units()
    return quotient.dimensionless and abs(quotient.magnitude - 1.0) <= 1e-12


def _show(unit) -> str:
    text = f"{unit:~}"
    return text or "1"


def _text(node) -> str:
    text = str(node)
    return text if len(text) <= 120 else text[:117] + "..."
