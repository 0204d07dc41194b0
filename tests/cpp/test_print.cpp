// Tensor::str() against PyTorch's repr. Every expected string below was produced by torch 1.13
// on the development machine (repr(t) with "torch." replaced by "ember."), not written by hand.
#include <cmath>
#include <sstream>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {
// float32 i / d for i in [0, n), as torch.arange(float(n)) / d computes it.
Tensor divf(int64_t n, float d) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(float(i) / d);
  return tensor(v);
}
Tensor div7(int64_t n) { return divf(n, 7.0f); }
Tensor div29(int64_t n) { return divf(n, 29.0f); }
Tensor div3_f64(int64_t n) { return divf(n, 3.0f).to(kFloat64); }
}  // namespace

TEST(Print, StreamOperatorUsesStr) {
  std::ostringstream os;
  os << tensor({1, 2});
  EXPECT_EQ(os.str(), "tensor([1, 2])");
}

TEST(Print, DefaultDtypeFloat64DropsSuffix) {
  // With the default dtype set to float64 (torch.set_default_dtype), float64 prints bare and
  // float32 gets the suffix, as in PyTorch.
  set_default_dtype(kFloat64);
  std::string a = tensor({1.5, 2.0}, {.dtype = kFloat64}).str();
  std::string b = tensor({1.5, 2.0}, {.dtype = kFloat32}).str();
  set_default_dtype(kFloat32);
  EXPECT_EQ(a, "tensor([1.5000, 2.0000])");
  EXPECT_EQ(b, "tensor([1.5000, 2.0000], dtype=ember.float32)");
}

TEST(Print, Vec1D) {
  // torch.tensor([1.,2.,3.])
  EXPECT_EQ((tensor({1., 2., 3.})).str(),
      "tensor([1., 2., 3.])");
}

TEST(Print, Int2D) {
  // torch.tensor([[1,2],[3,4]])
  EXPECT_EQ((tensor({{1, 2}, {3, 4}})).str(),
      "tensor([[1, 2],\n"
      "        [3, 4]])");
}

TEST(Print, Int3D) {
  // torch.arange(12).reshape(2,2,3)
  EXPECT_EQ((arange(12).reshape({2, 2, 3})).str(),
      "tensor([[[ 0,  1,  2],\n"
      "         [ 3,  4,  5]],\n"
      "\n"
      "        [[ 6,  7,  8],\n"
      "         [ 9, 10, 11]]])");
}

TEST(Print, Float3D) {
  // (torch.arange(24.)/7).reshape(2,3,4)
  EXPECT_EQ((div7(24).reshape({2, 3, 4})).str(),
      "tensor([[[0.0000, 0.1429, 0.2857, 0.4286],\n"
      "         [0.5714, 0.7143, 0.8571, 1.0000],\n"
      "         [1.1429, 1.2857, 1.4286, 1.5714]],\n"
      "\n"
      "        [[1.7143, 1.8571, 2.0000, 2.1429],\n"
      "         [2.2857, 2.4286, 2.5714, 2.7143],\n"
      "         [2.8571, 3.0000, 3.1429, 3.2857]]])");
}

TEST(Print, ZeroDimFloat) {
  // torch.tensor(3.5)
  EXPECT_EQ((scalar_tensor(3.5, {.dtype = kFloat32})).str(),
      "tensor(3.5000)");
}

TEST(Print, ZeroDimInt) {
  // torch.tensor(3)
  EXPECT_EQ((scalar_tensor(3)).str(),
      "tensor(3)");
}

TEST(Print, ZeroDimBool) {
  // torch.tensor(True)
  EXPECT_EQ((scalar_tensor(true)).str(),
      "tensor(True)");
}

TEST(Print, NegZero) {
  // torch.tensor(-0.)
  EXPECT_EQ((scalar_tensor(-0.0, {.dtype = kFloat32})).str(),
      "tensor(-0.)");
}

TEST(Print, Empty2D) {
  // torch.zeros(0,4)
  EXPECT_EQ((zeros({0, 4})).str(),
      "tensor([], size=(0, 4))");
}

TEST(Print, Empty1D) {
  // torch.zeros(0)
  EXPECT_EQ((zeros({0})).str(),
      "tensor([])");
}

TEST(Print, EmptyInt64) {
  // torch.zeros(0,dtype=torch.int64)
  EXPECT_EQ((zeros({0}, {.dtype = kInt64})).str(),
      "tensor([], dtype=ember.int64)");
}

TEST(Print, Empty3DInt32) {
  // torch.zeros(2,0,3,dtype=torch.int32)
  EXPECT_EQ((zeros({2, 0, 3}, {.dtype = kInt32})).str(),
      "tensor([], size=(2, 0, 3), dtype=ember.int32)");
}

TEST(Print, Int32Suffix) {
  // torch.tensor([1,2],dtype=torch.int32)
  EXPECT_EQ((tensor({1, 2}, {.dtype = kInt32})).str(),
      "tensor([1, 2], dtype=ember.int32)");
}

TEST(Print, Float64Suffix) {
  // torch.tensor([1.5,2],dtype=torch.float64)
  EXPECT_EQ((tensor({1.5, 2.0}, {.dtype = kFloat64})).str(),
      "tensor([1.5000, 2.0000], dtype=ember.float64)");
}

TEST(Print, SciLargeRatioInt) {
  // torch.tensor([1e10,1.])
  EXPECT_EQ((tensor({1e10, 1.0})).str(),
      "tensor([1.0000e+10, 1.0000e+00])");
}

TEST(Print, SciSmall) {
  // torch.tensor([1e-5,1.])
  EXPECT_EQ((tensor({1e-5, 1.0})).str(),
      "tensor([1.0000e-05, 1.0000e+00])");
}

TEST(Print, SciLarge) {
  // torch.tensor([1.5,1e9])
  EXPECT_EQ((tensor({1.5, 1e9})).str(),
      "tensor([1.5000e+00, 1.0000e+09])");
}

TEST(Print, SciRatio) {
  // torch.tensor([100.,1e8])
  EXPECT_EQ((tensor({100.0, 1e8})).str(),
      "tensor([1.0000e+02, 1.0000e+08])");
}

TEST(Print, Bool1D) {
  // torch.tensor([True,False])
  EXPECT_EQ((tensor({true, false})).str(),
      "tensor([ True, False])");
}

TEST(Print, NanInfIntMode) {
  // torch.tensor([nan, 1., inf, -inf])
  EXPECT_EQ((tensor({NAN, 1.0, INFINITY, -INFINITY})).str(),
      "tensor([nan, 1., inf, -inf])");
}

TEST(Print, NanInfFixed) {
  // torch.tensor([nan, 1.5, inf])
  EXPECT_EQ((tensor({NAN, 1.5, INFINITY})).str(),
      "tensor([   nan, 1.5000,    inf])");
}

TEST(Print, OnlyNan) {
  // torch.tensor([nan])
  EXPECT_EQ((tensor({NAN})).str(),
      "tensor([nan])");
}

TEST(Print, Zeros) {
  // torch.tensor([0.,0.])
  EXPECT_EQ((zeros({2})).str(),
      "tensor([0., 0.])");
}

TEST(Print, SummarizedInt) {
  // torch.arange(2000)
  EXPECT_EQ((arange(2000)).str(),
      "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
}

TEST(Print, SummarizedFloat2D) {
  // torch.arange(2000.).reshape(40,50)
  EXPECT_EQ((arange(2000, {.dtype = kFloat32}).reshape({40, 50})).str(),
      "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.7000e+01, 4.8000e+01,\n"
      "         4.9000e+01],\n"
      "        [5.0000e+01, 5.1000e+01, 5.2000e+01,  ..., 9.7000e+01, 9.8000e+01,\n"
      "         9.9000e+01],\n"
      "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.4700e+02, 1.4800e+02,\n"
      "         1.4900e+02],\n"
      "        ...,\n"
      "        [1.8500e+03, 1.8510e+03, 1.8520e+03,  ..., 1.8970e+03, 1.8980e+03,\n"
      "         1.8990e+03],\n"
      "        [1.9000e+03, 1.9010e+03, 1.9020e+03,  ..., 1.9470e+03, 1.9480e+03,\n"
      "         1.9490e+03],\n"
      "        [1.9500e+03, 1.9510e+03, 1.9520e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
      "         1.9990e+03]])");
}

TEST(Print, Summarized3D) {
  // torch.arange(3000).reshape(10,10,30)
  EXPECT_EQ((arange(3000).reshape({10, 10, 30})).str(),
      "tensor([[[   0,    1,    2,  ...,   27,   28,   29],\n"
      "         [  30,   31,   32,  ...,   57,   58,   59],\n"
      "         [  60,   61,   62,  ...,   87,   88,   89],\n"
      "         ...,\n"
      "         [ 210,  211,  212,  ...,  237,  238,  239],\n"
      "         [ 240,  241,  242,  ...,  267,  268,  269],\n"
      "         [ 270,  271,  272,  ...,  297,  298,  299]],\n"
      "\n"
      "        [[ 300,  301,  302,  ...,  327,  328,  329],\n"
      "         [ 330,  331,  332,  ...,  357,  358,  359],\n"
      "         [ 360,  361,  362,  ...,  387,  388,  389],\n"
      "         ...,\n"
      "         [ 510,  511,  512,  ...,  537,  538,  539],\n"
      "         [ 540,  541,  542,  ...,  567,  568,  569],\n"
      "         [ 570,  571,  572,  ...,  597,  598,  599]],\n"
      "\n"
      "        [[ 600,  601,  602,  ...,  627,  628,  629],\n"
      "         [ 630,  631,  632,  ...,  657,  658,  659],\n"
      "         [ 660,  661,  662,  ...,  687,  688,  689],\n"
      "         ...,\n"
      "         [ 810,  811,  812,  ...,  837,  838,  839],\n"
      "         [ 840,  841,  842,  ...,  867,  868,  869],\n"
      "         [ 870,  871,  872,  ...,  897,  898,  899]],\n"
      "\n"
      "        ...,\n"
      "\n"
      "        [[2100, 2101, 2102,  ..., 2127, 2128, 2129],\n"
      "         [2130, 2131, 2132,  ..., 2157, 2158, 2159],\n"
      "         [2160, 2161, 2162,  ..., 2187, 2188, 2189],\n"
      "         ...,\n"
      "         [2310, 2311, 2312,  ..., 2337, 2338, 2339],\n"
      "         [2340, 2341, 2342,  ..., 2367, 2368, 2369],\n"
      "         [2370, 2371, 2372,  ..., 2397, 2398, 2399]],\n"
      "\n"
      "        [[2400, 2401, 2402,  ..., 2427, 2428, 2429],\n"
      "         [2430, 2431, 2432,  ..., 2457, 2458, 2459],\n"
      "         [2460, 2461, 2462,  ..., 2487, 2488, 2489],\n"
      "         ...,\n"
      "         [2610, 2611, 2612,  ..., 2637, 2638, 2639],\n"
      "         [2640, 2641, 2642,  ..., 2667, 2668, 2669],\n"
      "         [2670, 2671, 2672,  ..., 2697, 2698, 2699]],\n"
      "\n"
      "        [[2700, 2701, 2702,  ..., 2727, 2728, 2729],\n"
      "         [2730, 2731, 2732,  ..., 2757, 2758, 2759],\n"
      "         [2760, 2761, 2762,  ..., 2787, 2788, 2789],\n"
      "         ...,\n"
      "         [2910, 2911, 2912,  ..., 2937, 2938, 2939],\n"
      "         [2940, 2941, 2942,  ..., 2967, 2968, 2969],\n"
      "         [2970, 2971, 2972,  ..., 2997, 2998, 2999]]])");
}

TEST(Print, LineWrap) {
  // torch.arange(30.)/29
  EXPECT_EQ((div29(30)).str(),
      "tensor([0.0000, 0.0345, 0.0690, 0.1034, 0.1379, 0.1724, 0.2069, 0.2414, 0.2759,\n"
      "        0.3103, 0.3448, 0.3793, 0.4138, 0.4483, 0.4828, 0.5172, 0.5517, 0.5862,\n"
      "        0.6207, 0.6552, 0.6897, 0.7241, 0.7586, 0.7931, 0.8276, 0.8621, 0.8966,\n"
      "        0.9310, 0.9655, 1.0000])");
}

TEST(Print, WideInts) {
  // torch.arange(0,100000,1000)
  EXPECT_EQ((arange(0, 100000, 1000)).str(),
      "tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,\n"
      "        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,\n"
      "        20000, 21000, 22000, 23000, 24000, 25000, 26000, 27000, 28000, 29000,\n"
      "        30000, 31000, 32000, 33000, 34000, 35000, 36000, 37000, 38000, 39000,\n"
      "        40000, 41000, 42000, 43000, 44000, 45000, 46000, 47000, 48000, 49000,\n"
      "        50000, 51000, 52000, 53000, 54000, 55000, 56000, 57000, 58000, 59000,\n"
      "        60000, 61000, 62000, 63000, 64000, 65000, 66000, 67000, 68000, 69000,\n"
      "        70000, 71000, 72000, 73000, 74000, 75000, 76000, 77000, 78000, 79000,\n"
      "        80000, 81000, 82000, 83000, 84000, 85000, 86000, 87000, 88000, 89000,\n"
      "        90000, 91000, 92000, 93000, 94000, 95000, 96000, 97000, 98000, 99000])");
}

TEST(Print, Half) {
  // torch.tensor([-1.5,2.25],dtype=torch.float16)
  EXPECT_EQ((tensor({-1.5, 2.25}, {.dtype = kFloat16})).str(),
      "tensor([-1.5000,  2.2500], dtype=ember.float16)");
}

TEST(Print, BFloat16) {
  // torch.tensor([0.1,0.2],dtype=torch.bfloat16)
  EXPECT_EQ((tensor({0.1, 0.2}, {.dtype = kBFloat16})).str(),
      "tensor([0.1001, 0.2002], dtype=ember.bfloat16)");
}

TEST(Print, UInt8) {
  // torch.tensor([1,2],dtype=torch.uint8)
  EXPECT_EQ((tensor({1, 2}, {.dtype = kUInt8})).str(),
      "tensor([1, 2], dtype=ember.uint8)");
}

TEST(Print, Int8Neg) {
  // torch.tensor([-1,2],dtype=torch.int8)
  EXPECT_EQ((tensor({-1, 2}, {.dtype = kInt8})).str(),
      "tensor([-1,  2], dtype=ember.int8)");
}

TEST(Print, SciMatrix) {
  // torch.tensor([[1e-8, 1.],[2., 3.]])
  EXPECT_EQ((tensor({{1e-8, 1.0}, {2.0, 3.0}})).str(),
      "tensor([[1.0000e-08, 1.0000e+00],\n"
      "        [2.0000e+00, 3.0000e+00]])");
}

TEST(Print, BigIntMode) {
  // torch.tensor([123456789.,1.])
  EXPECT_EQ((tensor({123456789.0, 1.0})).str(),
      "tensor([1.2346e+08, 1.0000e+00])");
}

TEST(Print, ZeroDimSci) {
  // torch.tensor(1e10)
  EXPECT_EQ((scalar_tensor(1e10, {.dtype = kFloat32})).str(),
      "tensor(1.0000e+10)");
}

TEST(Print, ZeroDimNan) {
  // torch.tensor(nan)
  EXPECT_EQ((scalar_tensor(NAN, {.dtype = kFloat32})).str(),
      "tensor(nan)");
}

TEST(Print, NegSmall) {
  // torch.tensor([-1e-5,1.])
  EXPECT_EQ((tensor({-1e-5, 1.0})).str(),
      "tensor([-1.0000e-05,  1.0000e+00])");
}

TEST(Print, Signs) {
  // torch.tensor([1.,-2.,3.])
  EXPECT_EQ((tensor({1.0, -2.0, 3.0})).str(),
      "tensor([ 1., -2.,  3.])");
}

TEST(Print, SignsMatrix) {
  // torch.tensor([[-1.,2.],[3.,40.]])
  EXPECT_EQ((tensor({{-1.0, 2.0}, {3.0, 40.0}})).str(),
      "tensor([[-1.,  2.],\n"
      "        [ 3., 40.]])");
}

TEST(Print, WideRowSummarized) {
  // torch.arange(1100.).reshape(1,1100)
  EXPECT_EQ((arange(1100, {.dtype = kFloat32}).reshape({1, 1100})).str(),
      "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.0970e+03, 1.0980e+03,\n"
      "         1.0990e+03]])");
}

TEST(Print, Column) {
  // torch.arange(30.).reshape(30,1)*1.5
  EXPECT_EQ((arange(30, {.dtype = kFloat32}).reshape({30, 1}).mul(1.5)).str(),
      "tensor([[ 0.0000],\n"
      "        [ 1.5000],\n"
      "        [ 3.0000],\n"
      "        [ 4.5000],\n"
      "        [ 6.0000],\n"
      "        [ 7.5000],\n"
      "        [ 9.0000],\n"
      "        [10.5000],\n"
      "        [12.0000],\n"
      "        [13.5000],\n"
      "        [15.0000],\n"
      "        [16.5000],\n"
      "        [18.0000],\n"
      "        [19.5000],\n"
      "        [21.0000],\n"
      "        [22.5000],\n"
      "        [24.0000],\n"
      "        [25.5000],\n"
      "        [27.0000],\n"
      "        [28.5000],\n"
      "        [30.0000],\n"
      "        [31.5000],\n"
      "        [33.0000],\n"
      "        [34.5000],\n"
      "        [36.0000],\n"
      "        [37.5000],\n"
      "        [39.0000],\n"
      "        [40.5000],\n"
      "        [42.0000],\n"
      "        [43.5000]])");
}

TEST(Print, Ones3D) {
  // torch.zeros(1,1,1)
  EXPECT_EQ((zeros({1, 1, 1})).str(),
      "tensor([[[0.]]])");
}

TEST(Print, Bool2D) {
  // torch.tensor([[True,False],[False,True]])
  EXPECT_EQ((tensor({{true, false}, {false, true}})).str(),
      "tensor([[ True, False],\n"
      "        [False,  True]])");
}

TEST(Print, Int64Big) {
  // torch.full((5,),2**40+1)
  EXPECT_EQ((full({5}, int64_t(1099511627777))).str(),
      "tensor([1099511627777, 1099511627777, 1099511627777, 1099511627777,\n"
      "        1099511627777])");
}

TEST(Print, Float64Pi) {
  // torch.tensor([3.14159265],dtype=torch.float64)
  EXPECT_EQ((tensor({3.14159265}, {.dtype = kFloat64})).str(),
      "tensor([3.1416], dtype=ember.float64)");
}

TEST(Print, Float64LongRowSuffixWraps) {
  // (torch.arange(14.)/3).double()
  EXPECT_EQ((div3_f64(14)).str(),
      "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n"
      "        3.0000, 3.3333, 3.6667, 4.0000, 4.3333], dtype=ember.float64)");
}

TEST(Print, Int32LongRowSuffix) {
  // torch.arange(1000, 1026, dtype=torch.int32)
  EXPECT_EQ((arange(1000, 1026, 1, {.dtype = kInt32})).str(),
      "tensor([1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011,\n"
      "        1012, 1013, 1014, 1015, 1016, 1017, 1018, 1019, 1020, 1021, 1022, 1023,\n"
      "        1024, 1025], dtype=ember.int32)");
}

TEST(Print, Int16Matrix) {
  // torch.arange(6, dtype=torch.int16).reshape(2,3)
  EXPECT_EQ((arange(6, {.dtype = kInt16}).reshape({2, 3})).str(),
      "tensor([[0, 1, 2],\n"
      "        [3, 4, 5]], dtype=ember.int16)");
}

TEST(Print, NonContiguous) {
  // torch.arange(6).reshape(2,3).t()
  EXPECT_EQ((arange(6).reshape({2, 3}).t()).str(),
      "tensor([[0, 3],\n"
      "        [1, 4],\n"
      "        [2, 5]])");
}

TEST(Print, FourD) {
  // torch.arange(16).reshape(2,2,2,2)
  EXPECT_EQ((arange(16).reshape({2, 2, 2, 2})).str(),
      "tensor([[[[ 0,  1],\n"
      "          [ 2,  3]],\n"
      "\n"
      "         [[ 4,  5],\n"
      "          [ 6,  7]]],\n"
      "\n"
      "\n"
      "        [[[ 8,  9],\n"
      "          [10, 11]],\n"
      "\n"
      "         [[12, 13],\n"
      "          [14, 15]]]])");
}

TEST(Print, EmptyFloat64) {
  // torch.zeros(0,dtype=torch.float64)
  EXPECT_EQ((zeros({0}, {.dtype = kFloat64})).str(),
      "tensor([], dtype=ember.float64)");
}

TEST(Print, EmptyBool) {
  // torch.zeros(3,0,dtype=torch.bool)
  EXPECT_EQ((zeros({3, 0}, {.dtype = kBool})).str(),
      "tensor([], size=(3, 0), dtype=ember.bool)");
}
