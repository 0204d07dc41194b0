"""ember.nn.utils.parametrizations (torch.nn.utils.parametrizations): weight_norm,
spectral_norm and orthogonal as parametrizations (nn.utils.parametrize), torch 2.x's
recommended forms."""
from ... import _C
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


def _norm_except_dim(v, dim):
    """The 2-norm of v over every dim but `dim` (all of v for dim -1), shaped to broadcast."""
    if dim == -1:
        return v.norm()
    dim = dim % v.dim()
    shape = [1] * v.dim()
    shape[dim] = v.size(dim)
    moved = v.movedim(dim, 0).reshape(v.size(dim), -1)
    return moved.norm(2, 1).reshape(shape)


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """weight = g * v / ||v||: registers original0 (g) and original1 (v) under
    module.parametrizations.<name>."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = _C.empty([h], dtype=mat.dtype, device=mat.device).normal_(0, 1)
            v = _C.empty([w], dtype=mat.dtype, device=mat.device).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n):
        from ... import no_grad
        with no_grad():
            for _ in range(n):
                self._u.copy_(F.normalize(_C.mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_C.mv(mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = _C.dot(u, _C.mv(mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """weight / sigma(weight), sigma the largest singular value estimated by power iteration
    (one step per training forward; buffers _u and _v on the parametrization)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ---------------------------------------------------------------- orthogonal
_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(Q):
    k = Q.size(-1)
    eye = _C.eye(k, dtype=Q.dtype, device=Q.device)
    from ... import finfo
    eps = 10.0 * Q.size(-2) * finfo(Q.dtype).eps
    return bool(((Q.mH @ Q - eye).abs() <= eps).all())


def _make_orthogonal(A):
    """The Q of A = QR with diag(R) >= 0 (unique for a full-rank A)."""
    from ... import linalg
    Q, R = linalg.qr(A)
    signs = R.diagonal(0, -2, -1).sgn()
    signs = _C.where(signs == 0, _C.ones_like(signs), signs)
    return Q * signs.unsqueeze(-2)


class _Orthogonal(Module):
    """X -> an orthogonal (unitary) matrix: exp or Cayley transform of the skew part of X's lower
    triangle, or the Householder product of its strict lower triangle; with trivialization the
    result multiplies a stored orthogonal `base` (set by right_inverse), as torch's."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        from ... import linalg
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = _C.cat([X, _C.zeros(tuple(X.shape[:-2]) + (n, n - k), dtype=X.dtype, device=X.device)], -1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = linalg.matrix_exp(A)
            else:
                eye = _C.eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = linalg.householder_product(A, tau)
            Q = Q * X.diagonal(0, -2, -1).int().unsqueeze(-2)
        if getattr(self, "base", None) is not None:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        from ...autograd.grad_mode import no_grad
        with no_grad():
            if tuple(Q.shape) != tuple(self.shape):
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in ("cayley", "matrix_exp"):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                from ..._householder import geqrf
                A, tau = geqrf(Q)
                signs = A.diagonal(0, -2, -1).sign()
                signs = _C.where(tau == 0.0, -signs, signs)
                A = _set_diagonal(A, signs)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = _C.randn(tuple(Q.shape[:-2]) + (n, n - k), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(_C.cat([Q, N], -1))
            self.base = Q
            neg_eye = _C.zeros_like(Q_init)
            return _set_diagonal(neg_eye, _C.full(tuple(neg_eye.diagonal(0, -2, -1).shape), -1.0, dtype=Q.dtype,
                                                  device=Q.device))


def _set_diagonal(A, values):
    """A copy of A whose main diagonal (of the last two dims) is `values`."""
    out = A.clone()
    out.diagonal(0, -2, -1).copy_(values)
    return out


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Makes module.<name> (a matrix or batch of matrices) orthogonal, or unitary when complex:
    orthonormal columns when it is tall, rows when it is wide. orthogonal_map: "matrix_exp"
    (default for square or complex), "cayley", or "householder" (default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.dim()} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
