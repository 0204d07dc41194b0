"""ember.onnx: the names torch programs touch. Exporting a model to ONNX is not implemented yet
(ROADMAP.md item 13: graph capture and model export); `export` says so instead of writing a file
that would not be a real ONNX graph. `is_in_onnx_export()` is False, as in torch outside export,
so model code that branches on it takes its ordinary path."""

__all__ = ["export", "is_in_onnx_export", "OperatorExportTypes", "TrainingMode"]


def is_in_onnx_export():
    return False


def export(model, args, f=None, *a, **kw):
    raise NotImplementedError(
        "ember.onnx.export: exporting to ONNX is not implemented in ember yet (roadmap item 13: graph "
        "capture and model export). Save the weights with ember.save(model.state_dict(), path) and export "
        "from PyTorch, which loads ember's .pt files.")


def dynamo_export(*args, **kwargs):
    return export(*args, **kwargs)


class OperatorExportTypes:
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class TrainingMode:
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2
