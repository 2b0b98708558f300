"""Equation templates: ``equations()`` runs once per component structure, not per instance.

A model of many instances of few classes (a chain of bodies and joints) spends most of its
flattening time in the components' ``equations()``, which build casadi expressions scalar
operation by scalar operation from Python (~10–40 µs each). Instances that a class declares
alike (:meth:`mbmodel.Model.template_key`) write the same equations up to their own symbols,
so the first one's equations become a casadi Function of its symbols, and the others get
theirs by calling it with their own (one call, the expression graph copied in C++).

What makes an instance's equations a template is checked when they are recorded, never
assumed: they may contain only the component's own parameters and variables (and those of
the components its :meth:`~mbmodel.Model.template_partners` names, whose declarations then
follow its own in the template's inputs), derivatives of them (``der``) and time; they may
be equations, :class:`~mbmodel.Assert` conditions and :class:`~mbmodel.Derivative`
declarations only (no ``connect``, no ``when``, no
comparisons on variables (relations, also under ``noEvent``), ``pre``, ``sample`` or
``initial``, no events declared); the questions ``is_root()`` and
``loop_cut_side()`` are asked again for every instance and must get the same answers
(``connected()`` makes the structure not a template, unless the class states that its key
captures what the answers decide: ``Model.template_key_reads_connections``).
What the key promises, and only it, is that nothing else the equations read (parameter
values used as numbers, attributes, other components) differs between instances with equal
keys. Instances that do not qualify run ``equations()`` as before.
"""

from __future__ import annotations

import casadi as ca

from .alias import linear_pattern
from .core import Assert, Connector, Derivative, Model, Parameter, Variable
from .core import time as TIME
from .flat import stacked

__all__ = ["template_key", "partners", "EquationTemplate", "Recorder", "Instantiated"]


def _own_declarations(comp: Model, active) -> list:
    """The component's own parameters and active variables (connector variables
    included), in declaration order."""
    found = []
    for member in comp._members.values():
        if isinstance(member, Parameter):
            found.append(member)
        elif isinstance(member, Variable):
            if active(member):
                found.append(member)
        elif isinstance(member, Connector):
            found.extend(v for v in member._variables.values() if active(v))
    return found


def partners(comp: Model) -> tuple:
    """The components whose declarations ``comp``'s template takes besides its own
    (:meth:`~mbmodel.Model.template_partners`): asked only of a class whose key reads the
    connections."""
    if not vars(type(comp)).get("template_key_reads_connections", False):
        return ()
    return tuple(comp.template_partners())


def _declarations(comp: Model, active, partnered=()) -> list:
    """The layout of a template's symbol vector: the component's own declarations, then
    each partner's, in declaration order."""
    found = _own_declarations(comp, active)
    for partner in partnered:
        found.extend(_own_declarations(partner, active))
    return found


def _layout(comp: Model, active) -> tuple | None:
    """Names, kinds and shapes of ``comp``'s declarations (which are active), or None for
    a composite model (it connects: not a template)."""
    layout = []
    for key, member in comp._members.items():
        if isinstance(member, Model):
            return None
        if isinstance(member, Parameter):
            layout.append((key, "Parameter", member.shape))
        elif isinstance(member, Variable):
            layout.append((key, "Variable", member.shape, member.kind, active(member)))
        elif isinstance(member, Connector):
            layout.append((key, type(member).__name__,
                           tuple((name, v.kind, v.shape, active(v))
                                 for name, v in member._variables.items())))
    return tuple(layout)


def template_key(comp: Model, active, partnered=()):
    """The key under which ``comp``'s equations may be shared, or None: its class, its
    declarations (names, kinds, shapes; which are active), the class's own
    :meth:`~mbmodel.Model.template_key` (stated by that class itself, not inherited) and
    the classes and declarations of its ``partnered`` components (:func:`partners`)."""
    if "template_key" not in vars(type(comp)):
        # A key holds for the class that states it: a subclass may read more in its
        # equations (an attribute of its own) than the key it would inherit covers.
        return None
    own = comp.template_key()
    if own is None:
        return None
    layout = _layout(comp, active)
    if layout is None:
        return None  # composite models connect: they are not templates
    if not partnered:
        return type(comp), layout, own
    partner_layouts = tuple((type(p), _layout(p, active)) for p in partnered)
    if any(found is None for _, found in partner_layouts):
        return None
    return type(comp), layout, own, partner_layouts


class Recorder:
    """Wraps a flattening context's questions and derivatives while one instance's
    equations run, recording them so that another instance can replay them."""

    def __init__(self, ctx, comp, active, partnered=()):
        self.ctx, self.comp = ctx, comp
        self.declarations = _declarations(comp, active, partnered)
        self.first_element = {d.symbol[0].element_hash(): i
                              for i, d in enumerate(self.declarations)}
        self.questions: list[tuple[str, object, object]] = []
        self.derivatives: list[ca.SX] = []  # the scalar symbols differentiated, in order
        self.unsupported = False
        self._saved = (ctx.is_root, ctx.connected, ctx.loop_cut_side, ctx.make_derivative)

    def __enter__(self):
        is_root, connected, loop_cut_side, make_derivative = self._saved

        def recorded_is_root(symbol):
            answer = is_root(symbol)
            where = self.first_element.get(ca.SX(symbol)[0].element_hash())
            if where is None or self.declarations[where].shape != ca.SX(symbol).shape:
                self.unsupported = True
            self.questions.append(("is_root", where, answer))
            return answer

        def recorded_connected(connector):
            # The answer names other components: a template holds only if the class's key
            # captures what it decides (and the equations use only the instance's symbols,
            # checked when they are recorded).
            if not vars(type(self.comp)).get("template_key_reads_connections", False):
                self.unsupported = True
            return connected(connector)

        def recorded_loop_cut_side(connector):
            answer = loop_cut_side(connector)
            name = self._member_name(connector)
            if answer is not None or name is None:
                self.unsupported = True
            self.questions.append(("loop_cut_side", name, answer))
            return answer

        def recorded_derivative(symbol):
            self.derivatives.append(symbol)
            before = len(self.ctx.symbol_to_variable)
            answer = make_derivative(symbol)
            self.registered_by_der += len(self.ctx.symbol_to_variable) - before
            return answer

        self.registered_by_der = 0
        self.registered_before = len(self.ctx.symbol_to_variable)
        self.ctx.is_root, self.ctx.connected = recorded_is_root, recorded_connected
        self.ctx.loop_cut_side, self.ctx.make_derivative = (recorded_loop_cut_side,
                                                            recorded_derivative)
        return self

    def __exit__(self, *exc):
        (self.ctx.is_root, self.ctx.connected, self.ctx.loop_cut_side,
         self.ctx.make_derivative) = self._saved
        # Symbols registered by anything but der() (relation, pre, sample and initial
        # knowns: flat variables of their own) would be missing from the other instances.
        registered = len(self.ctx.symbol_to_variable) - self.registered_before
        if registered != self.registered_by_der:
            self.unsupported = True
        return False

    def _member_name(self, connector):
        for key, member in self.comp._members.items():
            if member is connector:
                return key
        return None


class Instantiated:
    """An instance's equations from a template: the flat residuals as one column and the
    equations as written (for messages), their alias forms
    (:attr:`mbmodel.flat.FlatEquation.alias_form`), its asserts as ``(condition elements,
    message, whether they read parameters only)`` and its declared derivatives
    (:class:`~mbmodel.Derivative`)."""

    def __init__(self, residuals: ca.SX, shown, alias_forms, asserts, derivatives,
                 slopes=None):
        self.residuals, self.shown, self.asserts = residuals, shown, asserts
        self.alias_forms = alias_forms
        self.derivatives = derivatives
        # per residual, its slopes (:attr:`mbmodel.flat.FlatEquation.slopes`), or None
        self.slopes = slopes or [None] * len(shown)


class EquationTemplate:
    """One component structure's equations as a Function of an instance's symbols (see
    the module docs). :meth:`record` returns None where the equations do not qualify."""

    def __init__(self, function, layout, questions, derivative_positions, alias_forms, sizes,
                 slopes, columns, residuals, along):
        self.function = function
        # The class's Jacobian, found once: per residual, its constant entries as
        # ``[(column, number)]`` and the columns of the others, over the declared variables'
        # entries followed by the derivatives (parameters and time are knowns).
        self.slopes = slopes
        self.columns = columns  # the entries of ``along`` the slopes are along
        # the recorded instance's residuals in its (symbols, derivatives) ``along``
        self.residuals, self.along = residuals, along
        self._with_constants: dict = {}  # (row, constants) -> slopes (slopes_with_constants)
        # Alias elimination's reading of each residual, found once for the class: in
        # positions of the symbol vector (see linear_pattern), False where not an alias.
        self.alias_forms = alias_forms
        self.sizes = sizes  # per declaration: its number of elements (None: a parameter)
        self.with_aliases = any(alias_forms)
        # per output group: ("equations", n) / ("assert", n, message, on parameters only)
        self.layout = layout
        self.questions = questions
        self.derivative_positions = derivative_positions
        self.needs_elements = bool(derivative_positions) or any(
            entry[0] == "derivative" for entry in layout)

    @classmethod
    def record(cls, recorder: Recorder, items: list, initial: list, is_discrete_target,
               events_declared: bool):
        """The template of the instance whose ``equations()`` yielded ``items`` (recorded
        by ``recorder``), or None if they do not qualify."""
        if recorder.unsupported or initial or events_declared:
            return None
        local = ca.veccat(*[d.symbol for d in recorder.declarations])
        entries = local.elements()
        position = {s.element_hash(): k for k, s in enumerate(entries)}
        derivative_positions = []
        for symbol in recorder.derivatives:
            k = position.get(symbol.element_hash())
            if k is None:
                return None
            if k not in derivative_positions:
                derivative_positions.append(k)
        derivatives = [recorder.ctx.make_derivative(entries[k]) for k in derivative_positions]
        if any(s.element_hash() in position for s in derivatives):
            return None  # a declared Derivative answered der(): its own symbol, an input
        residuals, shown, conditions, layout = [], [], [], []
        for item in items:
            if isinstance(item, Assert):
                elements = item.condition.elements()
                conditions.extend(elements)
                layout.append(("assert", len(elements), item.message))
            elif isinstance(item, Derivative):
                pairs = [[position.get(s.element_hash()) if s.is_symbolic() else None
                          for s in side.elements()]
                         for side in (item.variable, item.derivative)]
                if None in pairs[0] + pairs[1]:
                    return None
                layout.append(("derivative", pairs[0], pairs[1]))
            elif isinstance(item, ca.SX):
                elements = item.elements()
                for e in elements:
                    if not e.is_op(ca.OP_EQ) or is_discrete_target(e.dep(0)):
                        return None
                    residuals.append(e.dep(0) - e.dep(1))
                    shown.append(e)
                layout.append(("equations", len(elements)))
            else:
                return None  # connect, when, a number: the general path
        outputs = [stacked(residuals), stacked(shown), stacked(conditions)]
        allowed = set(position) | {s.element_hash() for s in derivatives} | {TIME.element_hash()}
        if any(s.element_hash() not in allowed for s in ca.symvar(ca.vertcat(*outputs))):
            return None  # another component's symbols, relations, pre(): not its own
        inputs = [local, stacked(derivatives), TIME]
        function = ca.Function("template", inputs, outputs)
        sizes, variable_at, start = [], {}, 0
        for d in recorder.declarations:
            n = d.symbol.numel()
            sizes.append(None if isinstance(d, Parameter) else n)
            if not isinstance(d, Parameter):
                variable_at.update((entries[k].element_hash(), k) for k in range(start, start + n))
            start += n
        # per assert: whether it reads parameters only (checked with their values) or
        # variables and time too (along a run): the same for every instance
        reads_known = {s.element_hash() for k, s in enumerate(entries)
                       if s.element_hash() not in variable_at}
        start = 0
        for k, entry in enumerate(layout):
            if entry[0] == "assert":
                read = ca.symvar(ca.vertcat(*conditions[start:start + entry[1]]))
                layout[k] = (*entry, all(s.element_hash() in reads_known for s in read))
                start += entry[1]
        alias_forms = [linear_pattern(r, variable_at) or False for r in residuals]
        columns = sorted(variable_at.values()) + [len(entries) + k
                                                  for k in range(len(derivatives))]
        along = ca.vertcat(local, *derivatives)
        return cls(function, layout, list(recorder.questions), derivative_positions,
                   alias_forms, sizes, _slopes(outputs[0], along, columns), columns,
                   outputs[0], along)

    def slopes_with_constants(self, row: int, constants: tuple) -> tuple[list, list]:
        """Residual ``row``'s slopes (as :attr:`slopes`: ``([(column, number)],
        [column])``) where the columns in ``constants``, ``((column, value), ...)``, are
        those numbers: an instance's equation after alias elimination made those variables
        constants (a joint's torque without a drive: 0, which folds the products it is in).
        Found once per row and set of constants, for every instance that has them."""
        key = (row, constants)
        found = self._with_constants.get(key)
        if found is None:
            residual = ca.substitute(self.residuals[row],
                                     self.along[[c for c, _ in constants]],
                                     ca.DM([value for _, value in constants]))
            found = self._with_constants[key] = _slopes(residual, self.along,
                                                        self.columns)[0]
        return found

    def instantiate(self, comp: Model, ctx, active, partnered, first_position,
                    fresh_derivative, position_of) -> Instantiated | None:
        """``comp``'s equations from the template, or None if one of its questions gets
        another answer than the recorded instance's (then its own equations() run).
        ``partnered``: its partner components (:func:`partners`); ``first_position``: the
        flat position of each declared variable's first element, by the declaration's id;
        ``fresh_derivative(symbol)``: whether ``der()`` answered
        with a derivative variable of its own; ``position_of(symbol)``: a variable's flat
        position."""
        declarations = _declarations(comp, active, partnered)
        for kind, where, answer in self.questions:
            if kind == "is_root":
                if ctx.is_root(declarations[where].symbol) != answer:
                    return None
            elif ctx.loop_cut_side(comp._members[where]) != answer:
                return None
        local = ca.veccat(*[d.symbol for d in declarations])
        elements = local.elements() if self.needs_elements else None
        derivatives = [ctx.make_derivative(elements[k]) for k in self.derivative_positions]
        residuals, shown, conditions = self.function.call(
            [local, stacked(derivatives), TIME])
        conditions = conditions.elements()
        asserts, declared, start = [], [], 0
        for entry in self.layout:
            if entry[0] == "assert":
                asserts.append((conditions[start:start + entry[1]], entry[2], entry[3]))
                start += entry[1]
            elif entry[0] == "derivative":
                declared.append(Derivative(ca.vertcat(*[elements[k] for k in entry[1]]),
                                           ca.vertcat(*[elements[k] for k in entry[2]])))
        forms, slopes = self.alias_forms, None
        if not all(fresh_derivative(d) for d in derivatives):
            # der() answered with another variable (a declared Derivative's input) or a
            # constant: a residual the template read as no alias may be one here
            forms = [None] * len(forms)
        else:
            positions = []  # flat position of each column (None: a parameter)
            for d, n in zip(declarations, self.sizes):
                if n is None:
                    positions.extend([None] * d.symbol.numel())
                else:
                    first = first_position[id(d)]
                    positions.extend(range(first, first + n))
            positions.extend(position_of(d) for d in derivatives)  # fresh: variables
            if self.with_aliases:
                forms = [([(positions[k], c) for k, c in form[0]], form[1]) if form else False
                         for form in forms]
            slopes = [(constant, varying, positions) for constant, varying in self.slopes]
        return Instantiated(residuals, shown.elements(), forms, asserts, declared, slopes)


def _slopes(residuals: ca.SX, columns_vector: ca.SX, columns: list) -> list:
    """Per entry of ``residuals``: ``([(column, number)], [column])``, its constant and its
    varying derivatives along ``columns`` (entries of ``columns_vector``), from one
    Jacobian. casadi folds every operation on numbers, so a constant derivative is a
    constant node (as a directional derivative of the instance's equation would be)."""
    jac = ca.jacobian(residuals, columns_vector[columns]) if columns else ca.SX(
        residuals.numel(), 0)
    rows, cols = jac.sparsity().get_triplet()
    slopes = [([], []) for _ in range(residuals.numel())]
    for r, c, entry in zip(rows, cols, jac.nonzeros()):
        if entry.is_constant():
            slopes[r][0].append((columns[c], float(entry)))
        else:
            slopes[r][1].append(columns[c])
    return slopes
