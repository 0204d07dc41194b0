"""ember.distributions: torch.distributions' probability distributions over ember tensors
(sampling and reparameterised sampling, log_prob, cdf/icdf, entropy, moments, expand, argument
validation with torch's messages), transforms and TransformedDistribution, biject_to /
transform_to, and kl_divergence. Pure Python over ember ops, as torch's are; the special
functions they need (lgamma, digamma, erfinv, ...) are ember's C++ ops with gradients."""
from . import constraints  # noqa: F401
from . import transforms  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .constraint_registry import biject_to, transform_to
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "ExponentialFamily", "Gamma", "Independent",
           "MultivariateNormal", "Normal", "TransformedDistribution", "Uniform", "biject_to", "constraints",
           "kl_divergence", "register_kl", "transform_to"]
__all__.extend(transforms.__all__)
