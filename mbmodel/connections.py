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

from .core import Connector, _where
from .errors import InvalidConnectionError

__all__ = ["build_connection_graph", "connection_equations", "unconnected",
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


def connection_equations(fl, graph: nx.Graph):
    """Potentials equal, flows summed, per connection set; returns optional edges of the
    overdetermined graph as (node_a, node_b, owner)."""
    optional_edges = []
    for nodes in _connected_sets(graph):
        owner = graph.edges[next(iter(graph.edges(nodes[0])))]["owner"]
        first_item = nodes[0][0]
        if isinstance(first_item, Connector):
            for key, var in first_item._variables.items():
                if not fl.active(var):
                    continue
                if var.kind == "flow":
                    terms = [_symbol_of(item, key) * (1 if side == "inside" else -1)
                             for item, side in nodes]
                    total = _sum_columns(terms)
                    names = ", ".join(f"{'+' if side == 'inside' else '-'}{item.path}.{key}"
                                      for item, side in nodes)
                    fl.emit(total, owner, f"flow sum: {names} = 0", "connection")
                elif var.kind == "overdetermined":
                    for (ia, _), (ib, _) in _tree_pairs(graph, nodes):
                        optional_edges.append((ia._variables[key], ib._variables[key], owner))
                else:
                    base = _symbol_of(nodes[0][0], key)
                    for item, _side in nodes[1:]:
                        fl.emit(base - _symbol_of(item, key), owner,
                                   f"{nodes[0][0].path}.{key} = {item.path}.{key}",
                                   "connection")
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
                               "connection")
    return optional_edges


def unconnected(fl, graph: nx.Graph):
    for comp, conn in fl.connectors:
        if (conn, "inside") in graph:
            continue
        for key, var in conn._variables.items():
            if var.kind == "flow" and fl.active(var):
                fl.emit(var.symbol, comp._parent or comp,
                           f"{conn.path}.{key} = 0 (unconnected)", "unconnected flow")
    for comp, sig in fl.signals:
        if sig.kind == "input" and comp is not fl.root and (sig, "inside") not in graph:
            raise InvalidConnectionError(
                f"input '{sig.path}' of {type(comp).__name__} is not connected; connect it "
                f"to an Output (e.g. a Constant block) in {_where(comp._parent)}")


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
