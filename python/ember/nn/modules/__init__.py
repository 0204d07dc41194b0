"""The layers of ember.nn (torch.nn's module set)."""
from .module import Module  # noqa: F401
from .linear import Identity, Linear, Bilinear, Flatten, Unflatten  # noqa: F401
from .conv import Conv1d, Conv2d  # noqa: F401
from .pooling import MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d  # noqa: F401
from .pooling import LPPool1d, LPPool2d, MaxUnpool1d, MaxUnpool2d  # noqa: F401
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm, RMSNorm  # noqa: F401
from .normalization import BatchNorm3d  # noqa: F401
from .activation import (ReLU, ReLU6, LeakyReLU, GELU, SiLU, ELU, Softplus, Sigmoid, Tanh, Softmax,  # noqa: F401
                         Softmin, LogSoftmax, Hardtanh, Hardsigmoid, Hardswish, Mish, LogSigmoid, Softsign,
                         Tanhshrink, PReLU)
from .activation import SELU, CELU, RReLU, Threshold, Hardshrink, Softshrink, Softmax2d  # noqa: F401
from .dropout import Dropout, Dropout1d, Dropout2d  # noqa: F401
from .dropout import Dropout3d, AlphaDropout, FeatureAlphaDropout  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .loss import (L1Loss, MSELoss, CrossEntropyLoss, NLLLoss, SmoothL1Loss, HuberLoss, BCELoss,  # noqa: F401
                   BCEWithLogitsLoss, KLDivLoss)
from .loss import (MarginRankingLoss, HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss,  # noqa: F401
                   CosineEmbeddingLoss, TripletMarginLoss, TripletMarginWithDistanceLoss, MultiMarginLoss,
                   MultiLabelMarginLoss, GaussianNLLLoss, PoissonNLLLoss)
from .container import Container, Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .rnn import RNNBase, RNN, LSTM, GRU  # noqa: F401
from .transformer import MultiheadAttention, TransformerEncoderLayer, TransformerEncoder  # noqa: F401
from .conv import Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .pooling import (MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,  # noqa: F401
                      AdaptiveMaxPool3d)
from .fold import Fold, Unfold  # noqa: F401
# ---- issue 15 layers
from .padding import (ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,  # noqa: F401
                      ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                      ReplicationPad3d, CircularPad1d, CircularPad2d, CircularPad3d)
from .upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d  # noqa: F401
from .pixelshuffle import PixelShuffle, PixelUnshuffle, ChannelShuffle  # noqa: F401
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from .local_response_norm import LocalResponseNorm  # noqa: F401
from .distance import PairwiseDistance, CosineSimilarity  # noqa: F401
from .activation import GLU  # noqa: F401
from .rnn import RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .transformer import TransformerDecoderLayer, TransformerDecoder, Transformer  # noqa: F401
# ---- the remaining torch.nn layers (lazy modules, CTC, fractional pooling, adaptive softmax, ...)
from .lazy import (LazyModuleMixin, LazyLinear, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,  # noqa: F401
                   LazyConvTranspose2d, LazyConvTranspose3d, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,
                   LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)
from .loss import CTCLoss, NLLLoss2d  # noqa: F401
from .pooling import LPPool3d, MaxUnpool3d  # noqa: F401
from .fractional_pool import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: F401
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from .sync_batchnorm import SyncBatchNorm  # noqa: F401
from .local_response_norm import CrossMapLRN2d  # noqa: F401
