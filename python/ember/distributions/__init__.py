"""ember.distributions: torch.distributions' probability distributions over ember tensors
(sampling, log_prob, entropy, moments, argument validation) and kl_divergence. Pure Python over
ember ops, as torch's are; the special functions they need (lgamma, digamma, erfinv, ...) are
ember's C++ ops with gradients."""
from . import constraints  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Gamma", "Independent",
           "MultivariateNormal", "Normal", "Uniform", "constraints", "kl_divergence", "register_kl"]
