"""Auto-wrap policies (torch.distributed.fsdp.wrap): which submodules become FSDP units of their own.

A policy is called as policy(module=m, recurse=..., nonwrapped_numel=n): with recurse=True it
answers whether to look inside m, with recurse=False whether to wrap m, whose parameters not yet in
a unit number n."""
__all__ = ["ModuleWrapPolicy", "transformer_auto_wrap_policy", "size_based_auto_wrap_policy",
           "lambda_auto_wrap_policy", "always_wrap_policy"]


def always_wrap_policy(module, recurse, nonwrapped_numel, **kwargs):
    return True


def lambda_auto_wrap_policy(module, recurse, nonwrapped_numel, lambda_fn):
    return True if recurse else bool(lambda_fn(module))


def transformer_auto_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls):
    return True if recurse else isinstance(module, tuple(transformer_layer_cls))


def size_based_auto_wrap_policy(module, recurse, nonwrapped_numel, min_num_params=int(1e8),
                                force_leaf_modules=None, exclude_wrap_modules=None):
    from ...nn import ModuleList, ModuleDict, MultiheadAttention
    force_leaf = tuple(force_leaf_modules) if force_leaf_modules is not None else (MultiheadAttention,)
    exclude = tuple(exclude_wrap_modules) if exclude_wrap_modules is not None else (ModuleList, ModuleDict)
    if recurse:
        return not isinstance(module, force_leaf)
    return nonwrapped_numel >= min_num_params and not isinstance(module, exclude)


size_based_auto_wrap_policy.FORCE_LEAF_MODULES = None
size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = None


class ModuleWrapPolicy:
    """Wraps every submodule that is an instance of one of module_classes."""

    def __init__(self, module_classes):
        self._module_classes = tuple(module_classes)

    def __call__(self, module, recurse, nonwrapped_numel, **kwargs):
        return True if recurse else isinstance(module, self._module_classes)

    def __repr__(self):
        return f"ModuleWrapPolicy({[c.__name__ for c in self._module_classes]})"


def _recursive_wrap(module, policy, wrap, ignored_modules, only_wrap_children=False):
    """Wraps module's subtree bottom-up (torch's algorithm); returns (module or its wrapper,
    the number of parameters now inside units)."""
    from .fully_sharded_data_parallel import FullyShardedDataParallel
    if isinstance(module, FullyShardedDataParallel) or module in ignored_modules:
        return module, 0
    nonwrapped = sum(p.numel() for p in module.parameters())
    if not policy(module=module, recurse=True, nonwrapped_numel=nonwrapped):
        return module, 0
    wrapped_numel = 0
    for name, child in list(module.named_children()):
        new_child, n = _recursive_wrap(child, policy, wrap, ignored_modules)
        if new_child is not child:
            setattr(module, name, new_child)
        wrapped_numel += n
    remainder = nonwrapped - wrapped_numel
    if not only_wrap_children and policy(module=module, recurse=False, nonwrapped_numel=remainder):
        return wrap(module), nonwrapped
    return module, wrapped_numel


def _policy_callable(policy):
    if policy is None or callable(policy):
        return policy
    if isinstance(policy, (set, list, tuple)):  # torch accepts a set of classes too
        return ModuleWrapPolicy(policy)
    raise TypeError(f"FSDP: auto_wrap_policy must be callable or a set of module classes, got {type(policy).__name__}")

