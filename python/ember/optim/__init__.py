"""ember.optim: torch.optim's optimizers and lr schedulers.

The built-in optimizers run their update in ember's C++ library; Optimizer is the Python base
class to subclass for an optimizer of one's own (step() over self.param_groups / self.state).
"""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam
from .adamw import AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
