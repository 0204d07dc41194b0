"""One way to get and set a model's and its optimizers' state, whatever wraps the model
(torch.distributed.checkpoint.state_dict): FSDP gives sharded state (DTensors, for
ember.distributed.checkpoint) unless full_state_dict=True; DDP and plain modules give their
ordinary state under the unwrapped model's keys. Optimizer state is keyed by parameter name, so
it loads into another world size too."""
from dataclasses import dataclass

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict", "get_state_dict",
           "set_model_state_dict", "set_optimizer_state_dict", "set_state_dict"]


@dataclass
class StateDictOptions:
    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False


def _fsdp():
    from ..fsdp import FullyShardedDataParallel
    return FullyShardedDataParallel


def _unwrap(model):
    from ...nn.parallel import DistributedDataParallel
    return model.module if isinstance(model, DistributedDataParallel) else model


def _config(model, options):
    from ..fsdp import FullStateDictConfig, ShardedStateDictConfig, StateDictType
    options = options or StateDictOptions()
    if options.full_state_dict:
        return StateDictType.FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=options.cpu_offload)
    return StateDictType.SHARDED_STATE_DICT, ShardedStateDictConfig(offload_to_cpu=options.cpu_offload)


def _optimizers(optimizers):
    return list(optimizers) if isinstance(optimizers, (list, tuple)) else [optimizers]


def get_model_state_dict(model, *, submodules=None, options=None):
    model = _unwrap(model)
    FSDP = _fsdp()
    if isinstance(model, FSDP):
        with FSDP.state_dict_type(model, *_config(model, options)):
            sd = model.state_dict()
    else:
        sd = model.state_dict()
    if options is not None and options.ignore_frozen_params:
        frozen = {k for k, p in model.named_parameters() if not p.requires_grad}
        sd = {k: v for k, v in sd.items() if k not in frozen}
    return sd


def _plain_optim_state_dict(model, optim):
    names = {id(p): k for k, p in model.named_parameters()}
    osd = optim.state_dict()
    index_to_param = [p for g in optim.param_groups for p in g["params"]]
    state = {names[id(index_to_param[i])]: v for i, v in osd["state"].items()}
    groups = [{**{k: v for k, v in g.items() if k != "params"}, "params": [names[id(p)] for p in pg["params"]]}
              for g, pg in zip(osd["param_groups"], optim.param_groups)]
    return {"state": state, "param_groups": groups}


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options=None):
    model = _unwrap(model)
    FSDP = _fsdp()
    merged = {"state": {}, "param_groups": []}
    for optim in _optimizers(optimizers):
        if isinstance(model, FSDP):
            with FSDP.state_dict_type(model, *_config(model, options)):
                osd = FSDP.optim_state_dict(model, optim)
        else:
            osd = _plain_optim_state_dict(model, optim)
        merged["state"].update(osd["state"])
        merged["param_groups"].extend(osd["param_groups"])
    return merged


def get_state_dict(model, optimizers, *, submodules=None, options=None):
    return get_model_state_dict(model, options=options), get_optimizer_state_dict(model, optimizers, options=options)


def set_model_state_dict(model, model_state_dict, *, options=None):
    strict = options.strict if options is not None else True
    return _unwrap(model).load_state_dict(model_state_dict, strict=strict)


def _own_part(optim, names_of, osd):
    """The slice of a merged optimizer state dict that belongs to this optimizer."""
    mine = set()
    for g in optim.param_groups:
        for p in g["params"]:
            mine.update(names_of(p))
    groups = [g for g in osd["param_groups"] if set(g["params"]) & mine]
    return {"state": {k: v for k, v in osd["state"].items() if k in mine}, "param_groups": groups}


def set_optimizer_state_dict(model, optimizers, optim_state_dict, *, options=None):
    from ..tensor import DTensor
    model = _unwrap(model)
    FSDP = _fsdp()
    for optim in _optimizers(optimizers):
        if isinstance(model, FSDP):
            by_id = FSDP._param_keys(model)
            part = _own_part(optim, lambda p: by_id[id(p)][1], optim_state_dict)
            optim.load_state_dict(FSDP.optim_state_dict_to_load(model, optim, part))
        else:
            names = {id(p): k for k, p in model.named_parameters()}
            part = _own_part(optim, lambda p: [names[id(p)]], optim_state_dict)
            index = {}
            for g in optim.param_groups:
                for p in g["params"]:
                    index[names[id(p)]] = len(index)
            state = {index[k]: {n: (x.full_tensor() if isinstance(x, DTensor) else x) for n, x in v.items()}
                     for k, v in part["state"].items()}
            groups = [{**{k: v for k, v in g.items() if k != "params"}, "params": [index[n] for n in g["params"]]}
                      for g in part["param_groups"]]
            optim.load_state_dict({"state": state, "param_groups": groups})


def set_state_dict(model, optimizers, *, model_state_dict, optim_state_dict, options=None):
    result = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return result
