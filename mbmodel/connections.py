"""Connections: the connection graph of a model and the equations of its connection sets.

Nodes are ``(connector, side)`` pairs: a connector is *outside* in the ``connect`` statements
of the component that owns it and *inside* in those of its parent (Modelica's rule). Every
connected component of the graph is a connection set: potentials are equal, flows sum to
zero with outside members counted negative, and an inside connector that appears in no set
gets ``flow = 0``. Signals (Input/Output) form sets with exactly one driving output.

Functions of the flattener ``fl`` (:mod:`mbmodel.flatten`), which owns the symbol table and
receives the equations (``fl.emit``).
"""

from __future__ import annotations

import casadi as ca
import networkx as nx

from .balance import balanced_connector
from .core import Connector, LoopCut, _where
from .errors import DeclarationError, InvalidConnectionError, KinematicLoopError
from .flat import describe

__all__ = ["build_connection_graph", "overdetermined_edges", "connection_equations", "cut_sides",
           "unconnected",
           "connection_sets_of"]


def build_connection_graph(fl) -> nx.Graph:
    """The connection graph of every connect statement (nodes ``(connector, side)``;
    each edge remembers the component whose statement made it); checks compatibility."""
    graph = nx.Graph()
    for comp in fl.components:
        for stmt in fl.connects.get(id(comp), ()):
            nodes = [_connect_node(fl, comp, item, stmt) for item in stmt.items]
            first = nodes[0]
            for other in nodes[1:]:
                _check_compatible(fl, comp, stmt, first, other)
                graph.add_edge(first, other, owner=comp)
    return graph


def _connect_node(fl, comp, item, stmt):
    if isinstance(item, Connector):
        owner = item.owner
        if owner is comp:
            return (item, "outside")
        if owner is not None and owner._parent is comp:
            return (item, "inside")
        if owner is not None and owner._parent is None and owner is not fl.root:
            raise InvalidConnectionError(
                f"{_where(comp)}: {stmt!r} names connector '{item.name}' of a "
                f"{type(owner).__name__} that is not a member of any model: assign it as an "
                f"attribute (self.name = ...) or with self.add(name, ...) in __init__ (a list "
                f"of components is registered when it is assigned; one appended to it later "
                f"is not)")
        raise InvalidConnectionError(
            f"{_where(comp)}: {stmt!r} names connector '{item.path}', which is neither a "
            f"connector of {comp.path or 'the model'} nor of one of its direct "
            f"sub-components; connect through the sub-component's own connectors")
    if isinstance(item, ca.SX) and item.numel() >= 1:
        recs = [fl.symbols.get(item[k].element_hash()) if item[k].is_symbolic() else None
                for k in range(item.numel())]
        if all(recs) and not any(r.is_parameter for r in recs):
            var_comp, decl = fl.declared_in[recs[0].position]
            if decl.kind in ("input", "output"):
                if var_comp is comp:
                    return (decl, "outside")
                if var_comp._parent is comp:
                    return (decl, "inside")
                raise InvalidConnectionError(
                    f"{_where(comp)}: {stmt!r} names signal '{decl.path}', which belongs "
                    f"neither to this component nor to a direct sub-component")
            raise InvalidConnectionError(
                f"{_where(comp)}: connect() takes connectors or Input/Output signals; "
                f"'{fl.variables[recs[0].position].name}' is a plain variable — write an "
                f"equation instead")
    raise InvalidConnectionError(f"{_where(comp)}: connect() cannot take {item!r}; pass "
                                 f"connectors (e.g. fl.resistor.p) or Input/Output signals")


def _check_compatible(fl, comp, stmt, a, b):
    (ia, _), (ib, _) = a, b
    if isinstance(ia, Connector) != isinstance(ib, Connector):
        raise InvalidConnectionError(f"{_where(comp)}: {stmt!r} mixes a physical connector "
                                     f"with a signal; connect like with like")
    if isinstance(ia, Connector):
        sa, sb = ia.signature(), ib.signature()
        if sa != sb:
            detail = _signature_difference(ia, ib)
            raise InvalidConnectionError(
                f"{_where(comp)}: cannot connect '{ia.path}' ({type(ia).__name__}) with "
                f"'{ib.path}' ({type(ib).__name__}): {detail}")
    elif ia.shape != ib.shape:
        raise InvalidConnectionError(f"{_where(comp)}: {stmt!r}: signals '{ia.path}' "
                                     f"{ia.shape} and '{ib.path}' {ib.shape} differ in size")


def overdetermined_edges(fl, graph: nx.Graph):
    """Optional edges of the orientation graph: per connection set, the pairs of a spanning
    tree of the set, for each overdetermined variable, as ``(var_a, var_b, owner, node_a,
    node_b)``."""
    edges = []
    for nodes in _connected_sets(graph):
        first_item = nodes[0][0]
        if not isinstance(first_item, Connector):
            continue
        keys = [key for key, var in first_item._variables.items()
                if var.kind == "overdetermined" and fl.active(var)]
        if not keys:
            continue
        owner = graph.edges[next(iter(graph.edges(nodes[0])))]["owner"]
        for node_a, node_b in _tree_pairs(graph, nodes):
            for key in keys:
                edges.append((node_a[0]._variables[key], node_b[0]._variables[key], owner,
                              node_a, node_b))
    return edges


def connection_equations(fl, graph: nx.Graph, cuts=()):
    """Potentials equal, flows summed, per connection set. A connection set that a loop cut
    (``(node_a, node_b, owner, path)`` from :func:`mbmodel.orientation.spanning_tree`)
    divides is connected part by part, and the cut gives the equations of its connector
    type's :meth:`~mbmodel.Connector.loop_closure`."""
    cuts_at: dict = {}
    for cut in cuts:
        cuts_at.setdefault(cut[0], []).append(cut)
    for nodes in _connected_sets(graph):
        owner = graph.edges[next(iter(graph.edges(nodes[0])))]["owner"]
        first_item = nodes[0][0]
        if isinstance(first_item, Connector):
            if not balanced_connector(fl, first_item):
                fl.balance_unchecked.update(id(graph.edges[edge]["owner"])
                                            for edge in graph.edges(nodes))
            set_cuts = [cut for node in nodes for cut in cuts_at.get(node, ())]
            parts = _parts(graph, nodes, set_cuts) if set_cuts else [nodes]
            cut_ends = [node for cut in set_cuts for node in cut[:2]]
            for part in parts:
                members = set(part)
                touching = [node for node in cut_ends if node in members]
                if len(touching) > 1:
                    raise KinematicLoopError(
                        f"{_where(owner)}: two loops close at one connection point "
                        f"({', '.join(dict.fromkeys(node[0].path for node in touching))}); "
                        f"close each loop "
                        f"at a frame of its own")
                _connect_part(fl, part, owner, with_flows=not touching)
            for node_a, node_b, cut_owner, path in set_cuts:
                part_a = next(p for p in parts if node_a in p)
                part_b = next(p for p in parts if node_b in p)
                _close_loop(fl, node_a[0], node_b[0], part_a, part_b, cut_owner, path)
        else:
            sources = [(d, s) for d, s in nodes
                       if (d.kind == "output" and s == "inside")
                       or (d.kind == "input" and s == "outside")]
            if len(sources) != 1:
                what = ("no output drives" if not sources else
                        "more than one output drives")
                raise InvalidConnectionError(
                    f"{_where(owner)}: {what} the signals "
                    f"{', '.join(d.path for d, _ in nodes)}; connect exactly one Output "
                    f"(or the enclosing model's Input) to each set of Inputs")
            src = sources[0][0]
            for d, _ in nodes:
                if d is not src:
                    fl.emit(d.symbol - src.symbol, owner, f"{d.path} = {src.path}",
                            "connection", fl.difference_forms(d, src))


def cut_sides(graph, cuts) -> dict:
    """For each connector on a side of a loop cut (connected to a cut end, also through the
    ports of composite models): the connectors on that side (ports left out), by id."""
    sides = {}
    cuts_at: dict = {}
    for cut in cuts:
        cuts_at.setdefault(cut[0], []).append(cut)
    sets = list(_connected_sets(graph))
    sets_of: dict = {}  # connector id -> the connection sets it is in (a port: two)
    for nodes in sets:
        for item, _ in nodes:
            sets_of.setdefault(id(item), []).append(nodes)
    for nodes in sets:
        set_cuts = [cut for node in nodes for cut in cuts_at.get(node, ())]
        if not set_cuts:
            continue
        ends = {node for cut in set_cuts for node in cut[:2]}
        for part in _parts(graph, nodes, set_cuts):
            if not ends & set(part):
                continue
            reached = {item: None for item, _ in part}
            queue = [item for item in reached if item.owner.components()]
            while queue:  # a port: what is connected to it on its other level
                port = queue.pop()
                for other in sets_of.get(id(port), ()):
                    if other is nodes:
                        continue
                    for item, _ in other:
                        if item not in reached:
                            reached[item] = None
                            if item.owner.components():
                                queue.append(item)
            members = [item for item in reached if not item.owner.components()]
            for item in reached:
                sides[id(item)] = members
    return sides


def _connect_part(fl, nodes, owner, with_flows=True):
    """Potentials equal and (unless a loop cut touches the part) flows summed; the
    overdetermined variables are left to the spanning tree."""
    for key, var in nodes[0][0]._variables.items():
        if not fl.active(var) or var.kind == "overdetermined":
            continue
        if var.kind == "flow":
            if with_flows:
                names = ", ".join(f"{'+' if side == 'inside' else '-'}{item.path}.{key}"
                                  for item, side in nodes)
                signs = tuple(1 if side == "inside" else -1 for _, side in nodes)
                flows = [item._variables[key] for item, _ in nodes]
                fl.emit(_flow_sum(nodes, key), owner, f"flow sum: {names} = 0", "connection",
                        fl.alias_forms(flows, lambda *flows: _sum_columns(
                            [f * sign for f, sign in zip(flows, signs)]), ("flow sum", signs)),
                        fl.sum_slopes(flows, signs))
        else:
            base = _symbol_of(nodes[0][0], key)
            for item, _side in nodes[1:]:
                fl.emit(base - _symbol_of(item, key), owner,
                        f"{nodes[0][0].path}.{key} = {item.path}.{key}", "connection",
                        fl.difference_forms(var, item._variables[key]))


def _flow_sum(nodes, key):
    # (casadi folds x * 1 to x and x * -1 to -x: the same nodes, without a product per
    # element made first)
    return _sum_columns([_symbol_of(item, key) if side == "inside" else -_symbol_of(item, key)
                         for item, side in nodes])


def _parts(graph, nodes, set_cuts):
    """The connection set split at its loop cuts (each cut is a pair of its spanning tree)."""
    tree = nx.Graph()
    tree.add_nodes_from(nodes)
    tree.add_edges_from(_tree_pairs(graph, nodes))
    for node_a, node_b, _, _ in set_cuts:
        tree.remove_edge(node_a, node_b)
    order = {n: i for i, n in enumerate(nodes)}
    return [sorted(part, key=order.__getitem__) for part in nx.connected_components(tree)]


def _close_loop(fl, a, b, part_a, part_b, owner, path):
    """The equations of a loop cut between connectors a and b, from their type's
    ``loop_closure``."""
    flows = [key for key, var in a._variables.items() if var.kind == "flow" and fl.active(var)]
    cut = LoopCut(a, b, {key: _flow_sum(part_a, key) for key in flows},
                  {key: _flow_sum(part_b, key) for key in flows}, path, owner,
                  [item for item, _ in part_a], [item for item, _ in part_b])
    fl.mark_loop(cut.components, [item for item, _ in part_a])
    items = a.loop_closure(b, cut)
    if items is None:
        raise KinematicLoopError(f"{_where(owner)}: {cut.describe()} cannot be closed by "
                                 f"{type(a).__name__} connectors")
    for item in items:
        equation, description = item if isinstance(item, tuple) else (item, None)
        expr = ca.SX(equation)
        for k in range(expr.numel()):
            e = expr[k]
            if not e.is_op(ca.OP_EQ):
                raise DeclarationError(
                    f"{type(a).__name__}.loop_closure for {cut.describe()} yielded "
                    f"'{describe(e)}', which is not an equation; yield lhs == rhs")
            text = description or f"loop closure {a.path} ~ {b.path}: {describe(e)}"
            fl.emit(e.dep(0) - e.dep(1), owner,
                    text if expr.numel() == 1 or description is None else f"{text} [{k}]",
                    "loop closure")


def unconnected(fl, graph: nx.Graph):
    for comp, conn in fl.connectors:
        if (conn, "inside") in graph:
            continue
        for key, var in conn._variables.items():
            if var.kind == "flow" and fl.active(var):
                first = len(fl.equations)
                fl.emit(var.symbol, comp._parent or comp,
                        f"{conn.path}.{key} = 0 (unconnected)", "unconnected flow")
                fl.unconnected_flows.update(dict.fromkeys(range(first, len(fl.equations)),
                                                          conn.path))
    for comp, sig in fl.signals:
        if sig.kind == "input" and comp is not fl.root and (sig, "inside") not in graph:
            raise InvalidConnectionError(
                f"input '{sig.path}' of {type(comp).__name__} is not connected; connect it "
                f"to an Output (e.g. a Constant block) in {_where(comp._parent)}. An input "
                f"takes its value through connect() only (an equation such as "
                f"'{sig.path} == x' does not set it): to feed it a variable x, connect it "
                f"to the Output of a component that an equation sets, e.g. the blocks "
                f"library's FreeSignal: 'yield self.feed.y == x' and "
                f"'connect(self.feed.y, {sig.path})'")


def _symbol_of(connector, key):
    return connector._variables[key].symbol


def _signature_difference(a: Connector, b: Connector) -> str:
    va, vb = a._variables, b._variables
    for key in va:
        if key not in vb:
            return f"'{b.path}' has no variable '{key}'"
        if va[key].kind != vb[key].kind:
            return (f"'{key}' is a {va[key].kind} variable in '{a.path}' but a {vb[key].kind} "
                    f"variable in '{b.path}' (flow connected to non-flow)")
        if va[key].shape != vb[key].shape:
            return f"'{key}' has shape {va[key].shape} vs {vb[key].shape}"
    extra = [k for k in vb if k not in va]
    return f"'{a.path}' has no variable '{extra[0]}'" if extra else "different connector types"


def _connected_sets(graph: nx.Graph):
    # Deterministic: networkx yields components in node insertion order; members sorted by
    # that same order.
    order = {n: i for i, n in enumerate(graph.nodes)}
    for comp in nx.connected_components(graph):
        yield sorted(comp, key=order.__getitem__)


def _tree_pairs(graph: nx.Graph, nodes):
    """Edges of a spanning tree of one connection set (for optional overdetermined edges)."""
    sub = graph.subgraph(nodes)
    return list(nx.bfs_edges(sub, nodes[0]))


def _sum_columns(terms):
    # Pairwise, so a flow sum over n connectors is an expression of depth log2(n).
    while len(terms) > 1:
        paired = [terms[k] + terms[k + 1] for k in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            paired.append(terms[-1])
        terms = paired
    return terms[0]


def connection_sets_of(statements) -> dict:
    """Connection sets from connect statements (``(owner, Connect)`` pairs), as connector
    id -> member connectors that belong to components stating physics (ports of composites
    are looked through)."""
    graph = nx.Graph()
    ports = set()
    for comp, item in statements:
        conns = [c for c in item.items if isinstance(c, Connector)]
        for c in conns:
            graph.add_node(c)
            if c.owner is comp:
                ports.add(id(c))
        graph.add_edges_from(zip(conns, conns[1:]))
    sets = {}
    order = {c: i for i, c in enumerate(graph.nodes)}  # deterministic member order
    for part in nx.connected_components(graph):
        members = sorted((c for c in part if id(c) not in ports), key=order.__getitem__)
        for c in part:
            sets[id(c)] = members
    return sets
