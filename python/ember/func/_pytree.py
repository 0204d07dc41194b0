"""Pytrees for ember.func (torch.utils._pytree's containers): tuples, lists, dicts (OrderedDict and
defaultdict too), namedtuples and deques are nodes; everything else, None included, is a leaf.

TreeSpec prints as torch's does ("TreeSpec(tuple, None, [*,\n  *])"), so the structure errors of
vmap, vjp and jvp read the same."""
import collections

__all__ = ["TreeSpec", "LEAF", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map",
           "broadcast_to_and_flatten"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class TreeSpec:
    """The structure of a pytree: the node's type, its context (dict keys, the namedtuple class,
    a defaultdict's factory) and one spec per child. LEAF is the one leaf spec."""

    __slots__ = ("type", "context", "children", "num_leaves")

    def __init__(self, typ, context, children):
        self.type = typ
        self.context = context
        self.children = children
        if typ is None:
            self.num_leaves = 1
        else:
            n = 0
            for c in children:
                n += c.num_leaves
            self.num_leaves = n

    def is_leaf(self):
        return self.type is None

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (self.type is other.type and self.context == other.context
                and len(self.children) == len(other.children)
                and all(a == b for a, b in zip(self.children, other.children)))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __repr__(self, indent=0):
        if self.type is None:
            return "*"
        name = "namedtuple" if self.type is _NAMEDTUPLE else self.type.__name__
        context = self.context
        if self.type in (dict, collections.OrderedDict, collections.defaultdict):
            context = list(self.context[1] if self.type is collections.defaultdict else self.context)
        out = f"TreeSpec({name}, {context}, ["
        if self.children:
            indent += 2
            out += self.children[0].__repr__(indent)
            if len(self.children) > 1:
                out += ","
            out += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self.children[1:])
        return out + "])"


class _NamedTupleMarker:
    pass


_NAMEDTUPLE = _NamedTupleMarker  # the node type of every namedtuple (its class is the context)
LEAF = TreeSpec(None, None, [])


def _children(tree):
    """(node type, context, children) of a node, or None for a leaf."""
    t = type(tree)
    if t is tuple:
        return tuple, None, list(tree)
    if t is list:
        return list, None, list(tree)
    if t is dict:
        return dict, list(tree.keys()), list(tree.values())
    if t not in _NODE_TYPES and not isinstance(tree, tuple):
        return None
    if t is collections.OrderedDict:
        return collections.OrderedDict, list(tree.keys()), list(tree.values())
    if t is collections.defaultdict:
        return collections.defaultdict, (tree.default_factory, list(tree.keys())), list(tree.values())
    if t is collections.deque:
        return collections.deque, tree.maxlen, list(tree)
    if _is_namedtuple(tree):
        return _NAMEDTUPLE, t, list(tree)
    return None


_NODE_TYPES = frozenset((tuple, list, dict, collections.OrderedDict, collections.defaultdict, collections.deque))


def _flatten_into(tree, leaves):
    node = _children(tree)
    if node is None:
        leaves.append(tree)
        return LEAF
    typ, context, kids = node
    return TreeSpec(typ, context, [_flatten_into(k, leaves) for k in kids])


def tree_flatten(tree):
    """(leaves, spec): the leaves left to right (dicts in insertion order) and the structure."""
    leaves = []
    spec = _flatten_into(tree, leaves)
    return leaves, spec


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def _build(spec, it):
    if spec.type is None:
        return next(it)
    kids = [_build(c, it) for c in spec.children]
    typ = spec.type
    if typ is tuple:
        return tuple(kids)
    if typ is list:
        return kids
    if typ is dict:
        return dict(zip(spec.context, kids))
    if typ is collections.OrderedDict:
        return collections.OrderedDict(zip(spec.context, kids))
    if typ is collections.defaultdict:
        return collections.defaultdict(spec.context[0], zip(spec.context[1], kids))
    if typ is collections.deque:
        return collections.deque(kids, maxlen=spec.context)
    return spec.context(*kids)  # a namedtuple


def tree_unflatten(leaves, spec):
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                         f"to a pytree that holds {spec.num_leaves} items ({spec}).")
    return _build(spec, iter(leaves))


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def _broadcast(prefix, spec, out):
    """Append to out one value of prefix per leaf of spec; False when prefix is not a prefix of spec."""
    node = _children(prefix)
    if node is None:  # a leaf of the prefix covers the whole subtree
        out.extend([prefix] * spec.num_leaves)
        return True
    typ, context, kids = node
    if spec.type is not typ:
        return False
    if typ in (dict, collections.OrderedDict, collections.defaultdict):
        keys = context[1] if typ is collections.defaultdict else context
        spec_keys = spec.context[1] if typ is collections.defaultdict else spec.context
        if set(keys) != set(spec_keys) or len(keys) != len(spec_keys):
            return False
        by_key = dict(zip(keys, kids))
        return all(_broadcast(by_key[k], c, out) for k, c in zip(spec_keys, spec.children))
    if typ is _NAMEDTUPLE and context is not spec.context:
        return False
    if len(kids) != len(spec.children):
        return False
    return all(_broadcast(k, c, out) for k, c in zip(kids, spec.children))


def broadcast_to_and_flatten(prefix, spec):
    """One value of the prefix tree per leaf of spec (a leaf of the prefix covers a whole
    subtree: in_dims=(0, None) for (tensor, dict)), or None when the structures do not match."""
    out = []
    return out if _broadcast(prefix, spec, out) else None
