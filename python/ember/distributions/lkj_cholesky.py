"""LKJCholesky(dim, concentration=1.): the LKJ distribution over correlation matrices, on their
lower Cholesky factors: density proportional to det(L L^T)^(concentration - 1) (times the
Jacobian of L -> L L^T). Sampled with the onion method (Lewandowski, Kurowicka & Joe, 2009)."""
import math

import ember

from .._size import Size
from . import constraints
from .beta import Beta
from .distribution import Distribution, _C_no_grad
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # the Beta draws of the onion method's Sec. 3.2, vectorised over rows: row i >= 1 of the
        # factor has squared norm y_i ~ Beta(i / 2, concentration + (dim - 2) / 2 - (i - 1) / 2) in
        # its first i entries. (torch 2.x draws Beta(i - 1/2, ...), whose samples do not follow
        # log_prob for dim > 2: their correlations are not exchangeable. ember keeps the paper's.)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = ember.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = 0.5 * offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        # the onion method, vectorised, generating the Cholesky factor's rows w directly: row i is
        # sqrt(y_i) times a uniform direction in its first i coordinates, then the diagonal
        # element that gives it unit norm
        with _C_no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = ember.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype,
                                   device=y.device).tril(-1)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
            # the first row is 0 / 0
            u_hypersphere[..., 0, :].fill_(0.0)
            w = ember.sqrt(y) * u_hypersphere
            eps = ember.finfo(w.dtype).tiny
            diag_elems = ember.clamp(1 - ember.sum(w ** 2, dim=-1), min=eps).sqrt()
            return w + ember.diag_embed(diag_elems)

    def log_prob(self, value):
        # p(L) proportional to prod_i L_ii^(2 (concentration - 1) + D - i) (Stan's
        # lkj_corr_cholesky), normalised as in Lewandowski et al. (2009), p. 1999
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = ember.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = ember.lgamma(alpha) * dm1
        numerator = ember.mvlgamma(alpha - 0.5, dm1)
        # the paper's pi term is D (D - 1) / 4 log(pi); multigammaln's is (D - 1)(D - 2) / 4 log(pi)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
