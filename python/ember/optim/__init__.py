"""ember.optim: torch.optim's optimizers and lr schedulers.

The built-in optimizers run their update in ember's C++ library; Optimizer is the Python base
class to subclass (Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD and LBFGS are such Python
optimizers over ember's tensor ops) for an optimizer of one's own (step() over self.param_groups / self.state).
"""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam
from .adamw import AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .adadelta import Adadelta
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from .rprop import Rprop
from .asgd import ASGD
from .lbfgs import LBFGS
from .adafactor import Adafactor
from .muon import Muon
from . import lr_scheduler
from . import swa_utils

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "Rprop", "ASGD", "LBFGS", "Adafactor", "Muon", "lr_scheduler", "swa_utils"]
