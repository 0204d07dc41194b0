"""ember.nn.utils: gradient clipping, flat parameter vectors, weight and spectral normalisation
(hooks and parametrizations) and parametrize."""
from .clip_grad import clip_grad_norm_, clip_grad_norm, clip_grad_value_, get_total_norm, clip_grads_with_norm_  # noqa: F401,E501
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from . import parametrize, parametrizations, prune  # noqa: F401
from .weight_norm import weight_norm, remove_weight_norm  # noqa: F401
from .spectral_norm import spectral_norm, remove_spectral_norm  # noqa: F401
from . import rnn  # noqa: F401,E402  (pad_sequence, pack_padded_sequence, ...)
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,  # noqa: F401,E402
                     fuse_linear_bn_weights)
from .init import skip_init  # noqa: F401,E402
from . import stateless  # noqa: F401,E402  (functional_call, deprecated: ember.func.functional_call)
