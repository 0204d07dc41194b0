// Optimizers against torch 1.13: trajectories for every optimizer and option, param groups, lr
// edits, zero_grad, state_dict layout, save/load/resume and error messages.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "ember/ember.h"
#include "ember/nn.h"
#include "ember/optim.h"
#include "test_utils.h"

using namespace ember;
using ember::testing::close_to;
using ember::testing::Ref;

namespace {

const std::vector<double> K = {0.5, 1.5, -0.7, 2.0, 1.0, 0.25};
const std::vector<double> C = {0.1, -0.3, 0.2, 0.05, -0.4, 0.6};

// grad = p * k + c (elementwise over the flattened parameter): the gradient of a quadratic.
void set_quadratic_grads(std::vector<Tensor>& params) {
  NoGradGuard g;
  for (auto& p : params) {
    int64_t n = p.numel();
    std::vector<double> k(K.begin(), K.begin() + n), c(C.begin(), C.begin() + n);
    Tensor kt = tensor(k, {.dtype = p.dtype()}), ct = tensor(c, {.dtype = p.dtype()});
    p.set_grad((p.detach().reshape({-1}) * kt + ct).reshape(p.sizes()));
  }
}

std::vector<Tensor> make_params(DType dt) {
  Tensor p0 = tensor({1.0, -2.0, 0.5, 3.0}, {.dtype = dt}).requires_grad_();
  Tensor p1 = tensor({{0.3, -0.1}, {2.0, -1.5}}, {.dtype = dt}).requires_grad_();
  return {p0, p1};
}

std::vector<double> flat_values(const std::vector<Tensor>& params) {
  std::vector<double> out;
  for (const auto& p : params)
    for (double v : p.detach().contiguous().reshape({-1}).tolist<double>()) out.push_back(v);
  return out;
}

struct Case {
  const char* name;
  DType dtype;
  std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make;
  std::vector<double> expected;  // p0 and p1 flattened after 5 steps
};

// Generated with /usr/bin/python3 and torch 1.13: the same two parameters, gradients and five
// steps, torch.optim.<Name>([p0, p1], **options).
const std::vector<Case>& cases() {
  static const std::vector<Case> cs = {
    {"SGD lr=0.1", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1}); },
     {0.7285371422767639, -0.7761516571044922, 0.5862610340118408, 0.9662320613861084, 0.18689045310020447, 0.06688840687274933, 2.6900885105133057, -0.5083279609680176}},
    {"SGD lr=0.1 momentum=0.9", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9}); },
     {0.30058711767196655, 0.9838702082633972, 0.7316483855247498, -1.7807703018188477, 0.008577960543334484, 0.30689141154289246, 3.853186845779419, 0.8311195373535156}},
    {"SGD lr=0.1 momentum=0.9 dampening=0.3", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.3}); },
     {0.4289186894893646, 0.5940209031105042, 0.6770472526550293, -1.301894187927246, 0.06204947829246521, 0.2537301182746887, 3.4163787364959717, 0.5976178050041199}},
    {"SGD lr=0.1 momentum=0.9 nesterov=True", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true}); },
     {0.17913080751895905, 0.9250249862670898, 0.8333265781402588, -1.2825456857681274, -0.04202882945537567, 0.29886704683303833, 4.666612148284912, 0.5881834030151367}},
    {"SGD lr=0.1 weight_decay=0.1", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .weight_decay = 0.1}); },
     {0.6895546913146973, -0.7273385524749756, 0.5563708543777466, 0.906633734703064, 0.17582190036773682, 0.06726407259702682, 2.563709020614624, -0.4780415892601013}},
    {"SGD lr=0.1 momentum=0.5 weight_decay=0.1 maximize=True", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.5, .weight_decay = 0.1, .maximize = true}); },
     {1.4420475959777832, -5.425528526306152, 0.3665808439254761, 10.07598876953125, 0.4945009648799896, -0.5862041115760803, 1.066066026687622, -4.9456987380981445}},
    {"SGD lr=0.05 momentum=0.8 dampening=0.1 weight_decay=0.2", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.05, .momentum = 0.8, .dampening = 0.1, .weight_decay = 0.2}); },
     {0.6026605367660522, -0.3600054681301117, 0.5283352136611938, 0.21942362189292908, 0.1460309624671936, 0.10832363367080688, 2.4533638954162598, -0.14107173681259155}},
    {"Adam", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{}); },
     {0.995000422000885, -1.9950001239776611, 0.505001962184906, 2.9950003623962402, 0.2950008809566498, -0.0950014740228653, 2.005000114440918, -1.4950003623962402}},
    {"Adam lr=0.1", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1}); },
     {0.5060165524482727, -1.5026137828826904, 0.9966129660606384, 2.5017619132995605, -0.1721855103969574, 0.31617775559425354, 2.5017175674438477, -1.0044622421264648}},
    {"Adam lr=0.1 weight_decay=0.1", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1, .weight_decay = 0.1}); },
     {0.5062761902809143, -1.5026328563690186, 0.993622899055481, 2.501762628555298, -0.16791462898254395, 0.3081718683242798, 2.50174617767334, -1.0044569969177246}},
    {"Adam lr=0.1 amsgrad=True", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1, .amsgrad = true}); },
     {0.5060165524482727, -1.5026137828826904, 0.9966129660606384, 2.5017619132995605, -0.1721855103969574, 0.31617775559425354, 2.5017175674438477, -1.0044622421264648}},
    {"Adam lr=0.1 betas=(0.8, 0.9) maximize=True", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1, .betas = {0.8, 0.9}, .maximize = true}); },
     {1.5023809671401978, -2.5016465187072754, 0.18412207067012787, 3.5012924671173096, 0.8025043606758118, -0.6007763147354126, 1.5039461851119995, -2.0021374225616455}},
    {"Adam lr=0.1 eps=0.001 weight_decay=0.1 amsgrad=True", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1, .eps = 0.001, .weight_decay = 0.1, .amsgrad = true}); },
     {0.5070316791534424, -1.502780795097351, 0.9905042052268982, 2.5018434524536133, -0.16611477732658386, 0.3074609041213989, 2.501272439956665, -1.0046265125274658}},
    {"AdamW", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{}); },
     {0.9949504733085632, -1.9948999881744385, 0.504976749420166, 2.9948501586914062, 0.29498597979545593, -0.09499657154083252, 2.0048999786376953, -1.4949252605438232}},
    {"AdamW lr=0.1", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = 0.1}); },
     {0.5021016001701355, -1.4936943054199219, 0.9931875467300415, 2.4878509044647217, -0.1725902557373047, 0.31573283672332764, 2.490715503692627, -0.9980607032775879}},
    {"AdamW lr=0.1 weight_decay=0.5", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = 0.1, .weight_decay = 0.5}); },
     {0.3314836323261261, -1.1012194156646729, 0.8389245271682739, 1.874193787574768, -0.18799930810928345, 0.29426226019859314, 2.0, -0.7175351977348328}},
    {"AdamW lr=0.1 amsgrad=True", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = 0.1, .amsgrad = true}); },
     {0.5021016001701355, -1.4936943054199219, 0.9931875467300415, 2.4878509044647217, -0.1725902557373047, 0.31573283672332764, 2.490715503692627, -0.9980607032775879}},
    {"AdamW lr=0.1 maximize=True betas=(0.5, 0.99)", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = 0.1, .betas = {0.5, 0.99}, .maximize = true}); },
     {1.5111985206604004, -2.499053716659546, 0.25120604038238525, 3.4914450645446777, 0.8307890892028809, -0.6430767774581909, 1.5078318119049072, -2.00588059425354}},
    {"RMSprop", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{}); },
     {0.6926865577697754, -1.6845353841781616, 0.8802677392959595, 2.6819982528686523, 0.02157106250524521, 0.13974863290786743, 2.3348164558410645, -1.1892699003219604}},
    {"RMSprop lr=0.1 momentum=0.9", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{.lr = 0.1, .momentum = 0.9}); },
     {-0.4215572476387024, 2.076728105545044, 12.951857566833496, -2.508854866027832, 0.4178525507450104, -0.44546380639076233, 13.443768501281738, 0.7553578615188599}},
    {"RMSprop lr=0.1 centered=True", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{.lr = 0.1, .centered = true}); },
     {-0.19986675679683685, 0.039089933037757874, 4.878080368041992, 0.578167736530304, -0.20985937118530273, 0.20413124561309814, 5.931354522705078, -0.03152056038379669}},
    {"RMSprop lr=0.1 centered=True momentum=0.5 weight_decay=0.1", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{.lr = 0.1, .weight_decay = 0.1, .momentum = 0.5, .centered = true}); },
     {-0.010354414582252502, 0.5618622899055481, 7.964607238769531, -0.4458498954772949, -0.22456802427768707, 0.23600710928440094, 8.777957916259766, -0.016128716990351677}},
    {"RMSprop lr=0.1 alpha=0.9 maximize=True", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{.lr = 0.1, .alpha = 0.9, .maximize = true}); },
     {2.1815969944000244, -3.1372110843658447, 0.28034740686416626, 4.119783878326416, 1.5645880699157715, -1.411499261856079, 1.0717121362686157, -2.6648507118225098}},
    {"Adagrad", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adagrad>(std::move(p), optim::AdagradOptions{}); },
     {0.9678418636322021, -1.9677695035934448, 0.5331553816795349, 2.9677460193634033, 0.26806843280792236, -0.06833402067422867, 2.032426118850708, -1.4678120613098145}},
    {"Adagrad lr=0.1 lr_decay=0.1", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adagrad>(std::move(p), optim::AdagradOptions{.lr = 0.1, .lr_decay = 0.1}); },
     {0.7297069430351257, -1.7237740755081177, 0.8248534202575684, 2.721923351287842, 0.05067552626132965, 0.1208372712135315, 2.2904176712036133, -1.2272224426269531}},
    {"Adagrad lr=0.1 initial_accumulator_value=0.5", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adagrad>(std::move(p), optim::AdagradOptions{.lr = 0.1, .initial_accumulator_value = 0.5}); },
     {0.7638298869132996, -1.6896889209747314, 0.6177207231521606, 2.6844637393951416, 0.16340422630310059, 0.07369288057088852, 2.30728816986084, -1.19529390335083}},
    {"Adagrad lr=0.1 weight_decay=0.1 maximize=True eps=0.001", DType::Float32, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adagrad>(std::move(p), optim::AdagradOptions{.lr = 0.1, .weight_decay = 0.1, .eps = 0.001, .maximize = true}); },
     {1.3365854024887085, -2.3312206268310547, 0.28156352043151855, 3.3291492462158203, 0.6505407691001892, -0.46625611186027527, 1.6884191036224365, -1.8350131511688232}},
    {"SGD lr=0.1", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1}); },
     {0.7285371249999999, -0.7761516875000001, 0.58626108515, 0.966232, 0.18689046874999996, 0.06688840625, 2.6900886812, -0.508328}},
    {"SGD lr=0.1 momentum=0.9", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9}); },
     {0.30058712499999996, 0.9838703125000001, 0.73164841715, -1.7807705000000005, 0.00857796874999996, 0.30689140625, 3.8531873372000005, 0.8311195000000003}},
    {"SGD lr=0.1 momentum=0.9 dampening=0.3", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.3}); },
     {0.42891868671250005, 0.5940209393312501, 0.6770473835225149, -1.3018942208000004, 0.06204945279687495, 0.253730128090625, 3.4163790681801203, 0.5976178432000003}},
    {"SGD lr=0.1 momentum=0.9 nesterov=True", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true}); },
     {0.17913076607874995, 0.9250250585668751, 0.8333265515412485, -1.28254568192, -0.04202884746718754, 0.29886705344093756, 4.666612412329989, 0.5881834316800001}},
    {"SGD lr=0.1 weight_decay=0.1", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .weight_decay = 0.1}); },
     {0.6895546928, -0.7273386239999998, 0.5563709296, 0.90663372065, 0.17582187711999994, 0.06726406656, 2.563709296, -0.47804165889999994}},
    {"SGD lr=0.1 momentum=0.5 weight_decay=0.1 maximize=True", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.5, .weight_decay = 0.1, .maximize = true}); },
     {1.442047528, -5.4255285696, 0.3665808608, 10.075988070750002, 0.49450091232000004, -0.5862040550400001, 1.0660660256, -4.9456985388}},
    {"SGD lr=0.05 momentum=0.8 dampening=0.1 weight_decay=0.2", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.05, .momentum = 0.8, .dampening = 0.1, .weight_decay = 0.2}); },
     {0.6026605155210973, -0.3600054876082507, 0.5283352375508787, 0.21942371696441712, 0.14603094976442524, 0.10832362724976273, 2.453363800814063, -0.1410717413735873}},
    {"Adam", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{}); },
     {0.9950003630543275, -1.9950001975224607, 0.5050019621687817, 2.9950001435365947, 0.29500087781908496, -0.09500147524992208, 2.0050002517555474, -1.495000295023454}},
    {"Adam lr=0.1", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1}); },
     {0.5060165276265075, -1.5026137335493293, 0.9966129818540335, 2.5017617557403713, -0.17218553314898627, 0.31617778469624985, 2.5017176743092144, -1.0044621580908488}},
    {"Adam lr=0.1 weight_decay=0.1", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1, .weight_decay = 0.1}); },
     {0.5062762069773452, -1.5026328365424515, 0.9936228734026019, 2.501762590722352, -0.1679146614136679, 0.30817190813675377, 2.5017464542389773, -1.0044570990904504}},
    {"Adam lr=0.1 amsgrad=True", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1, .amsgrad = true}); },
     {0.5060165276265075, -1.5026137335493293, 0.9966129818540335, 2.5017617557403713, -0.17218553314898627, 0.31617778469624985, 2.5017176743092144, -1.0044621580908488}},
    {"Adam lr=0.1 betas=(0.8, 0.9) maximize=True", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1, .betas = {0.8, 0.9}, .maximize = true}); },
     {1.502380907198949, -2.5016466452187385, 0.18412207742873418, 3.50129229014429, 0.8025043036884693, -0.6007762456606681, 1.503946282888238, -2.0021372543077494}},
    {"Adam lr=0.1 eps=0.001 weight_decay=0.1 amsgrad=True", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 0.1, .eps = 0.001, .weight_decay = 0.1, .amsgrad = true}); },
     {0.5070315828498679, -1.5027807048163466, 0.9905042824836005, 2.501843381651075, -0.16611476818704426, 0.3074609328235442, 2.501272464206908, -1.0046263458828033}},
    {"AdamW", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{}); },
     {0.9949504676955092, -1.9949003034794337, 0.5049768531137213, 2.9948502508479593, 0.29498598076765076, -0.0949965768267461, 2.0049001487343037, -1.4949254009612596}},
    {"AdamW lr=0.1", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = 0.1}); },
     {0.5021014926183764, -1.4936940629761086, 0.9931875313995009, 2.487850915333033, -0.17259029599910444, 0.3157327898528954, 2.4907153758757437, -0.9980605167243985}},
    {"AdamW lr=0.1 weight_decay=0.5", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = 0.1, .weight_decay = 0.5}); },
     {0.3314836294404149, -1.1012195821904922, 0.8389246232096307, 1.8741940148050602, -0.1879993430025368, 0.29426226936135663, 1.999999996210533, -0.7175351955247788}},
    {"AdamW lr=0.1 amsgrad=True", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = 0.1, .amsgrad = true}); },
     {0.5021014926183764, -1.4936940629761086, 0.9931875313995009, 2.487850915333033, -0.17259029599910444, 0.3157327898528954, 2.4907153758757437, -0.9980605167243985}},
    {"AdamW lr=0.1 maximize=True betas=(0.5, 0.99)", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions{.lr = 0.1, .betas = {0.5, 0.99}, .maximize = true}); },
     {1.5111985312273875, -2.499053869376763, 0.25120600972088397, 3.4914453985932004, 0.830789074526241, -0.6430767316645907, 1.5078317223998734, -2.0058804907210077}},
    {"RMSprop", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{}); },
     {0.6926866100620332, -1.6845352968047504, 0.8802678043052528, 2.6819981512564652, 0.021571053713054483, 0.13974864685970517, 2.334816734399025, -1.1892699119182062}},
    {"RMSprop lr=0.1 momentum=0.9", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{.lr = 0.1, .momentum = 0.9}); },
     {-0.42155726155830864, 2.076728412249015, 12.951858442487918, -2.5088550967905228, 0.4178526069632324, -0.44546406427565494, 13.443767583789297, 0.7553579152653741}},
    {"RMSprop lr=0.1 centered=True", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{.lr = 0.1, .centered = true}); },
     {-0.1998667524700238, 0.03908986675294904, 4.87807980201975, 0.5781678378247483, -0.2098593682546501, 0.20413124872704302, 5.93135361827689, -0.03152056289353357}},
    {"RMSprop lr=0.1 centered=True momentum=0.5 weight_decay=0.1", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{.lr = 0.1, .weight_decay = 0.1, .momentum = 0.5, .centered = true}); },
     {-0.010354446453600468, 0.5618623239907181, 7.964607220450099, -0.4458498473761647, -0.22456805316248818, 0.2360072519318213, 8.777957624729153, -0.016128745798828607}},
    {"RMSprop lr=0.1 alpha=0.9 maximize=True", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(p), optim::RMSpropOptions{.lr = 0.1, .alpha = 0.9, .maximize = true}); },
     {2.181597080003871, -3.137210776544115, 0.280347406130141, 4.119783786818421, 1.5645879113104175, -1.4114991130221686, 1.0717122732852395, -2.6648505714073822}},
    {"Adagrad", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adagrad>(std::move(p), optim::AdagradOptions{}); },
     {0.967841836267684, -1.9677694334954168, 0.5331553677751242, 2.9677458605295155, 0.26806840470633936, -0.068334009276928, 2.032426071920036, -1.4678120705378903}},
    {"Adagrad lr=0.1 lr_decay=0.1", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adagrad>(std::move(p), optim::AdagradOptions{.lr = 0.1, .lr_decay = 0.1}); },
     {0.7297069312731115, -1.7237740512398407, 0.8248534043148449, 2.7219231490271443, 0.05067552487453875, 0.12083725955119128, 2.2904177949382745, -1.227222350050573}},
    {"Adagrad lr=0.1 initial_accumulator_value=0.5", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adagrad>(std::move(p), optim::AdagradOptions{.lr = 0.1, .initial_accumulator_value = 0.5}); },
     {0.7638298146813574, -1.6896888835280932, 0.617720798286646, 2.6844637575509362, 0.16340422862418336, 0.07369287580480015, 2.307288409091809, -1.195293954360136}},
    {"Adagrad lr=0.1 weight_decay=0.1 maximize=True eps=0.001", DType::Float64, [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adagrad>(std::move(p), optim::AdagradOptions{.lr = 0.1, .weight_decay = 0.1, .eps = 0.001, .maximize = true}); },
     {1.336585465277735, -2.3312205778758575, 0.28156353415770713, 3.3291495217654536, 0.6505407248481319, -0.46625613583575304, 1.68841916223432, -1.8350132082031825}},

  };
  return cs;
}

}  // namespace

EMBER_DEVICE_TEST(Optim, TrajectoriesMatchTorch) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(std::string(c.name) + " " + dtype_name(c.dtype));
    auto params = make_params(c.dtype);
    auto opt = c.make(params);
    for (int s = 0; s < 5; ++s) {
      set_quadratic_grads(params);
      opt->step();
    }
    Tensor got = cat({params[0].detach().reshape({-1}), params[1].detach().reshape({-1})});
    EXPECT_TRUE(close_to(got, Ref{{8}, c.expected}, c.dtype));
  }
}

// A non-contiguous parameter (a transposed leaf) takes the same path as a contiguous one.
EMBER_DEVICE_TEST(Optim, NonContiguousParamMatchesContiguous) {
  for (const auto& c : cases()) {
    if (c.dtype != DType::Float64) continue;
    SCOPED_TRACE(c.name);
    auto ref = make_params(c.dtype);
    Tensor base = tensor({{0.3, 2.0}, {-0.1, -1.5}}, {.dtype = c.dtype});
    Tensor p1 = base.t().detach().requires_grad_();
    ASSERT_FALSE(p1.is_contiguous());
    std::vector<Tensor> params = {ref[0].detach().clone().requires_grad_(), p1};
    auto o1 = c.make(ref);
    auto o2 = c.make(params);
    for (int s = 0; s < 5; ++s) {
      set_quadratic_grads(ref);
      set_quadratic_grads(params);
      o1->step();
      o2->step();
    }
    EXPECT_EQ(flat_values(ref), flat_values(params));
    EXPECT_FALSE(params[1].is_contiguous());
  }
}

// An independent float64 re-implementation of Adam (amsgrad, weight decay) written from the
// paper's formulas, checked over 20 steps.
EMBER_DEVICE_TEST(Optim, AdamMatchesFloat64Reference) {
  double lr = 0.05, b1 = 0.85, b2 = 0.95, eps = 1e-6, wd = 0.03;
  Tensor p = tensor({0.7, -1.2, 2.5}, {.dtype = DType::Float64}).requires_grad_();
  std::vector<Tensor> ps = {p};
  optim::Adam adam(ps, {.lr = lr, .betas = {b1, b2}, .eps = eps, .weight_decay = wd, .amsgrad = true});
  std::vector<double> x = {0.7, -1.2, 2.5}, m(3, 0), v(3, 0), vmax(3, 0);
  for (int t = 1; t <= 20; ++t) {
    set_quadratic_grads(ps);
    adam.step();
    for (int i = 0; i < 3; ++i) {
      double g = x[i] * K[i] + C[i] + wd * x[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      vmax[i] = std::max(vmax[i], v[i]);
      double mhat = m[i] / (1 - std::pow(b1, t));
      double denom = std::sqrt(vmax[i]) / std::sqrt(1 - std::pow(b2, t)) + eps;
      x[i] -= lr * mhat / denom * 1.0;
      (void)mhat;
    }
  }
  EXPECT_TRUE(close_to(p.detach(), Ref{{3}, x}, DType::Float64));
}

EMBER_DEVICE_TEST(Optim, ParamGroupsWithDifferentLrs) {
  Tensor a = tensor({1.0, 2.0}).requires_grad_(), b = tensor({1.0, 2.0}).requires_grad_();
  optim::SGD sgd(std::vector<optim::ParamGroup>{{{a}}, {{b}, Value::dict({{"lr", 0.5}})}}, {.lr = 0.1});
  EXPECT_DOUBLE_EQ(sgd.param_groups[0].lr(), 0.1);
  EXPECT_DOUBLE_EQ(sgd.param_groups[1].lr(), 0.5);
  a.set_grad(ones({2}));
  b.set_grad(ones({2}));
  sgd.step();
  EXPECT_TRUE(close_to(a.detach(), Ref{{2}, {0.9, 1.9}}));
  EXPECT_TRUE(close_to(b.detach(), Ref{{2}, {0.5, 1.5}}));
  // Options missing from the group come from the defaults; the group's own keys come first.
  EXPECT_EQ(sgd.param_groups[1].options.repr(),
            "{'lr': 0.5, 'momentum': 0, 'dampening': 0, 'weight_decay': 0, 'nesterov': False, "
            "'maximize': False, 'foreach': None, 'differentiable': False}");
}

EMBER_DEVICE_TEST(Optim, EditingLrBetweenStepsTakesEffect) {
  Tensor a = tensor({1.0, 2.0}).requires_grad_();
  optim::Adam adam({a}, {.lr = 0.1});
  a.set_grad(ones({2}));
  adam.step();  // Adam's first step moves by lr
  EXPECT_TRUE(close_to(a.detach(), Ref{{2}, {0.9, 1.9}}));
  adam.param_groups[0].set_lr(0.0);
  adam.step();
  EXPECT_TRUE(close_to(a.detach(), Ref{{2}, {0.9, 1.9}}));
  adam.param_groups[0].set_lr(0.2);
  adam.step();
  EXPECT_TRUE(close_to(a.detach(), Ref{{2}, {0.7, 1.7}}));
}

EMBER_DEVICE_TEST(Optim, ParamsWithoutGradAreSkipped) {
  Tensor a = tensor({1.0}).requires_grad_(), b = tensor({1.0}).requires_grad_();
  optim::Adam adam({a, b}, {.lr = 0.1});
  a.set_grad(ones({1}));
  adam.step();
  EXPECT_NE(a.item<double>(), 1.0);
  EXPECT_EQ(b.item<double>(), 1.0);
  EXPECT_EQ(adam.state.size(), 1u);
}

EMBER_DEVICE_TEST(Optim, ZeroGrad) {
  Tensor a = tensor({1.0, 2.0}).requires_grad_();
  optim::SGD sgd({a}, {.lr = 0.1});
  a.set_grad(ones({2}));
  sgd.zero_grad(false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(close_to(a.grad(), Ref{{2}, {0.0, 0.0}}));
  sgd.zero_grad();
  EXPECT_FALSE(a.grad().defined());
  sgd.zero_grad(true);  // no grad: nothing to do
  EXPECT_FALSE(a.grad().defined());
}

namespace {

// Two groups (the second with lr 0.5), two steps: the layout torch 1.13 produces.
template <class Opt, class O> Value two_group_state_dict(O options) {
  Tensor p0 = tensor({1.0, -2.0, 0.5, 3.0}).requires_grad_(), p1 = tensor({0.5, 0.25}).requires_grad_();
  Opt o(std::vector<optim::ParamGroup>{{{p0}}, {{p1}, Value::dict({{"lr", 0.5}})}}, options);
  for (int s = 0; s < 2; ++s) {
    NoGradGuard g;
    p0.set_grad(p0.detach() * 0.5 + 0.1);
    p1.set_grad(p1.detach() - 0.2);
    o.step();
  }
  return o.state_dict();
}

void expect_state(const Value& st, const char* key, std::vector<double> values) {
  SCOPED_TRACE(key);
  ASSERT_TRUE(st.contains(key));
  const Tensor& t = st.at(key).to_tensor();
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_TRUE(close_to(t.reshape({-1}), Ref{{int64_t(values.size())}, values}, DType::Float32));
}

void expect_step_tensor(const Value& st, double step) {
  ASSERT_TRUE(st.at("step").is_tensor());
  const Tensor& t = st.at("step").to_tensor();
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.dim(), 0);
  EXPECT_EQ(t.item<double>(), step);
}

}  // namespace

// Values below: torch 1.13, printed by repr(opt.state_dict()['param_groups']) and the state.
EMBER_DEVICE_TEST(Optim, StateDictLayoutAdam) {
  Value sd = two_group_state_dict<optim::Adam>(optim::AdamOptions{});
  EXPECT_EQ(sd.at("param_groups").repr(),
            "[{'lr': 0.001, 'betas': (0.9, 0.999), 'eps': 1e-08, 'weight_decay': 0, 'amsgrad': False, "
            "'maximize': False, 'foreach': None, 'capturable': False, 'differentiable': False, 'fused': False, "
            "'params': [0]}, {'lr': 0.5, 'betas': (0.9, 0.999), 'eps': 1e-08, 'weight_decay': 0, 'amsgrad': "
            "False, 'maximize': False, 'foreach': None, 'capturable': False, 'differentiable': False, 'fused': "
            "False, 'params': [1]}]");
  const Value& st = sd.at("state");
  ASSERT_EQ(st.size(), 2u);
  ASSERT_TRUE(st.contains(0) && st.contains(1));
  ASSERT_EQ(st.at(0).size(), 3u);
  EXPECT_EQ(st.at(0).items()[0].first.to_string(), "step");
  EXPECT_EQ(st.at(0).items()[1].first.to_string(), "exp_avg");
  EXPECT_EQ(st.at(0).items()[2].first.to_string(), "exp_avg_sq");
  expect_step_tensor(st.at(0), 2);
  expect_state(st.at(0), "exp_avg", {0.11394999921321869, -0.1709499955177307, 0.06644999980926514, 0.3039500117301941});
  expect_state(st.at(0), "exp_avg_sq",
               {0.0007190403412096202, 0.0016182902036234736, 0.00024452776415273547, 0.005115841049700975});
  expect_state(st.at(1), "exp_avg", {0.007000006269663572, -0.040499988943338394});
  expect_state(st.at(1), "exp_avg_sq", {0.00012990999675821513, 0.00020499738457147032});
}

EMBER_DEVICE_TEST(Optim, StateDictLayoutAdamAmsgrad) {
  Value sd = two_group_state_dict<optim::Adam>(optim::AdamOptions{.betas = {0.8, 0.9}, .amsgrad = true});
  EXPECT_EQ(sd.at("param_groups")[0].repr(),
            "{'lr': 0.001, 'betas': (0.8, 0.9), 'eps': 1e-08, 'weight_decay': 0, 'amsgrad': True, "
            "'maximize': False, 'foreach': None, 'capturable': False, 'differentiable': False, 'fused': False, "
            "'params': [0]}");
  expect_state(sd.at("state").at(0), "max_exp_avg_sq",
               {0.06834002584218979, 0.15381000936031342, 0.023240024223923683, 0.48624005913734436});
  expect_state(sd.at("state").at(1), "max_exp_avg_sq", {0.012100000865757465, 0.020474988967180252});
}

EMBER_DEVICE_TEST(Optim, StateDictLayoutAdamW) {
  Value sd = two_group_state_dict<optim::AdamW>(optim::AdamWOptions{});
  EXPECT_EQ(sd.at("param_groups")[1].repr(),
            "{'lr': 0.5, 'betas': (0.9, 0.999), 'eps': 1e-08, 'weight_decay': 0.01, 'amsgrad': False, "
            "'foreach': None, 'maximize': False, 'capturable': False, 'params': [1]}");
  expect_step_tensor(sd.at("state").at(1), 2);
  expect_state(sd.at("state").at(0), "exp_avg",
               {0.1139495000243187, -0.17094898223876953, 0.06644975394010544, 0.3039485216140747});
  expect_state(sd.at("state").at(1), "exp_avg_sq", {0.00013091624714434147, 0.00020612397929653525});
}

EMBER_DEVICE_TEST(Optim, StateDictLayoutSGD) {
  Value sd = two_group_state_dict<optim::SGD>(optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  EXPECT_EQ(sd.at("param_groups")[0].repr(),
            "{'lr': 0.1, 'momentum': 0.9, 'dampening': 0, 'weight_decay': 0, 'nesterov': False, "
            "'maximize': False, 'foreach': None, 'differentiable': False, 'params': [0]}");
  expect_state(sd.at("state").at(0), "momentum_buffer",
               {1.1100000143051147, -1.6649999618530273, 0.6475000381469727, 2.9600000381469727});
  expect_state(sd.at("state").at(1), "momentum_buffer", {0.42000001668930054, 0.06999998539686203});
  // Without momentum torch stores None.
  Value plain = two_group_state_dict<optim::SGD>(optim::SGDOptions{.lr = 0.1});
  EXPECT_EQ(plain.at("state").repr(), "{0: {'momentum_buffer': None}, 1: {'momentum_buffer': None}}");
}

EMBER_DEVICE_TEST(Optim, StateDictLayoutRMSprop) {
  Value sd = two_group_state_dict<optim::RMSprop>(optim::RMSpropOptions{.momentum = 0.5, .centered = true});
  EXPECT_EQ(sd.at("param_groups")[0].repr(),
            "{'lr': 0.01, 'momentum': 0.5, 'alpha': 0.99, 'eps': 1e-08, 'centered': True, 'weight_decay': 0, "
            "'foreach': None, 'maximize': False, 'differentiable': False, 'params': [0]}");
  const Value& s0 = sd.at("state").at(0);
  EXPECT_TRUE(s0.at("step").is_int());
  EXPECT_EQ(s0.at("step").to_int(), 2);
  std::vector<std::string> keys;
  for (const auto& [k, v] : s0.items()) keys.push_back(k.to_string());
  EXPECT_EQ(keys, (std::vector<std::string>{"step", "square_avg", "momentum_buffer", "grad_avg"}));
  expect_state(s0, "square_avg", {0.006586229894310236, 0.01523971650749445, 0.0021112393587827682, 0.04936119541525841});
  expect_state(s0, "momentum_buffer", {11.867481231689453, -11.978038787841797, 11.614289283752441, 12.071015357971191});
  expect_state(s0, "grad_avg", {0.01143748126924038, -0.017407480627298355, 0.006462480872869492, 0.03133748471736908});
  expect_state(sd.at("state").at(1), "momentum_buffer", {-4.998857498168945, -5.023687362670898});
}

EMBER_DEVICE_TEST(Optim, StateDictLayoutAdagrad) {
  Value sd = two_group_state_dict<optim::Adagrad>(optim::AdagradOptions{});
  EXPECT_EQ(sd.at("param_groups")[1].repr(),
            "{'lr': 0.5, 'lr_decay': 0, 'eps': 1e-10, 'weight_decay': 0, 'initial_accumulator_value': 0, "
            "'foreach': None, 'maximize': False, 'params': [1]}");
  expect_step_tensor(sd.at("state").at(0), 2);
  expect_state(sd.at("state").at(0), "sum", {0.7140250205993652, 1.6110248565673828, 0.24152499437332153, 5.104025363922119});
  expect_state(sd.at("state").at(1), "sum", {0.1300000101327896, 0.20499998331069946});
  // torch creates Adagrad's state in the constructor.
  Tensor p = tensor({1.0, 2.0}).requires_grad_();
  optim::Adagrad fresh({p}, {.initial_accumulator_value = 0.25});
  Value s = fresh.state_dict().at("state").at(0);
  expect_step_tensor(s, 0);
  expect_state(s, "sum", {0.25, 0.25});
}

// Run 3 steps, save the state, build a new optimizer over copies of the parameters, load, and
// continue: parameters stay bit-identical to the uninterrupted run.
EMBER_DEVICE_TEST(Optim, ResumeIsBitIdentical) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(std::string(c.name) + " " + dtype_name(c.dtype));
    auto params = make_params(c.dtype);
    auto opt = c.make(params);
    for (int s = 0; s < 3; ++s) {
      set_quadratic_grads(params);
      opt->step();
    }
    Value saved = optim::deep_copy(opt->state_dict());
    std::vector<Tensor> copies;
    for (auto& p : params) copies.push_back(p.detach().clone().requires_grad_());
    auto resumed = c.make(copies);
    resumed->load_state_dict(saved);
    EXPECT_EQ(resumed->state_dict().at("param_groups").repr(), opt->state_dict().at("param_groups").repr());
    for (int s = 0; s < 4; ++s) {
      set_quadratic_grads(params);
      set_quadratic_grads(copies);
      opt->step();
      resumed->step();
    }
    EXPECT_EQ(flat_values(params), flat_values(copies));
    // The loaded state is a deep copy: no tensor is shared with the saved Value.
    Value now = resumed->state_dict().at("state");
    for (const auto& [k, st] : saved.at("state").items())
      for (const auto& [name, v] : st.items())
        if (v.is_tensor()) EXPECT_NE(v.to_tensor().impl(), now.at(k).at(name).to_tensor().impl());
  }
}

EMBER_DEVICE_TEST(Optim, LoadStateDictTakesSavedOptions) {
  Tensor a = tensor({1.0}).requires_grad_(), b = tensor({1.0}).requires_grad_();
  optim::SGD src({a}, {.lr = 0.3, .momentum = 0.5});
  optim::SGD dst({b}, {.lr = 0.1});
  dst.load_state_dict(src.state_dict());
  EXPECT_DOUBLE_EQ(dst.param_groups[0].lr(), 0.3);
  EXPECT_DOUBLE_EQ(dst.param_groups[0].options.at("momentum").to_double(), 0.5);
  // Editing the loaded optimizer does not touch the source.
  dst.param_groups[0].set_lr(0.7);
  EXPECT_DOUBLE_EQ(src.param_groups[0].lr(), 0.3);
}

EMBER_DEVICE_TEST(Optim, LoadStateDictErrors) {
  Tensor a = tensor({1.0}).requires_grad_(), b = tensor({1.0}).requires_grad_(), c = tensor({1.0}).requires_grad_();
  optim::Adam one({a});
  optim::Adam two(std::vector<optim::ParamGroup>{{{b}}, {{c}}});
  optim::Adam pair({b, c});
  EXPECT_THROW_MSG(one.load_state_dict(two.state_dict()), ValueError,
                   "loaded state dict has a different number of parameter groups");
  EXPECT_THROW_MSG(one.load_state_dict(pair.state_dict()), ValueError,
                   "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
}

EMBER_DEVICE_TEST(Optim, ConstructorErrors) {
  Tensor a = tensor({1.0}).requires_grad_();
  EXPECT_THROW_MSG(optim::SGD({a}, {.lr = -0.1}), ValueError, "Invalid learning rate: -0.1");
  EXPECT_THROW_MSG(optim::SGD({a}, {.lr = 0.1, .momentum = -1}), ValueError, "Invalid momentum value: -1.0");
  EXPECT_THROW_MSG(optim::SGD({a}, {.lr = 0.1, .nesterov = true}), ValueError,
                   "Nesterov momentum requires a momentum and zero dampening");
  EXPECT_THROW_MSG(optim::SGD({a}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}), ValueError,
                   "Nesterov momentum requires a momentum and zero dampening");
  EXPECT_THROW_MSG(optim::SGD({a}), ValueError,
                   "parameter group didn't specify a value of required optimization parameter lr");
  EXPECT_THROW_MSG(optim::Adam({a}, {.lr = -0.1}), ValueError, "Invalid learning rate: -0.1");
  EXPECT_THROW_MSG(optim::Adam({a}, {.betas = {1.5, 0.999}}), ValueError, "Invalid beta parameter at index 0: 1.5");
  EXPECT_THROW_MSG(optim::AdamW({a}, {.betas = {0.9, 1.0}}), ValueError, "Invalid beta parameter at index 1: 1.0");
  EXPECT_THROW_MSG(optim::Adam({a}, {.eps = -1e-8}), ValueError, "Invalid epsilon value: -1e-08");
  EXPECT_THROW_MSG(optim::AdamW({a}, {.weight_decay = -0.5}), ValueError, "Invalid weight_decay value: -0.5");
  EXPECT_THROW_MSG(optim::RMSprop({a}, {.alpha = -0.5}), ValueError, "Invalid alpha value: -0.5");
  EXPECT_THROW_MSG(optim::Adagrad({a}, {.lr_decay = -0.5}), ValueError, "Invalid lr_decay value: -0.5");
  EXPECT_THROW_MSG(optim::Adagrad({a}, {.initial_accumulator_value = -0.5}), ValueError,
                   "Invalid initial_accumulator_value value: -0.5");
  EXPECT_THROW_MSG(optim::Adam(std::vector<Tensor>{}), ValueError, "optimizer got an empty parameter list");
  EXPECT_THROW_MSG(optim::Adam(std::vector<optim::ParamGroup>{{{a}}, {{a}}}), ValueError,
                   "some parameters appear in more than one parameter group");
  optim::Adam adam({a});
  EXPECT_THROW_MSG(adam.add_param_group({{a}}), ValueError, "some parameters appear in more than one parameter group");
  Tensor nonleaf = a * 2;
  EXPECT_THROW_MSG(optim::Adam({nonleaf}), ValueError, "can't optimize a non-leaf Tensor");
}

EMBER_DEVICE_TEST(Optim, AddParamGroupFillsDefaults) {
  Tensor a = tensor({1.0}).requires_grad_(), b = tensor({1.0}).requires_grad_();
  optim::AdamW adamw({a}, {.lr = 1e-3, .weight_decay = 0.05});
  adamw.add_param_group({{b}, Value::dict({{"lr", 0.01}})});
  ASSERT_EQ(adamw.param_groups.size(), 2u);
  EXPECT_DOUBLE_EQ(adamw.param_groups[1].lr(), 0.01);
  EXPECT_DOUBLE_EQ(adamw.param_groups[1].options.at("weight_decay").to_double(), 0.05);
  // Group options are copies: editing one group leaves the defaults and the other group alone.
  adamw.param_groups[0].set_lr(0.5);
  EXPECT_DOUBLE_EQ(adamw.defaults().at("lr").to_double(), 1e-3);
  EXPECT_DOUBLE_EQ(adamw.param_groups[1].lr(), 0.01);
}

EMBER_DEVICE_TEST(Optim, ModuleParameters) {
  nn::Linear lin(3, 2);
  optim::AdamW adamw(lin.parameters(), {.lr = 1e-2, .weight_decay = 0.01});
  Tensor x = randn({4, 3});
  Tensor before = lin.parameters()[0].detach().clone();
  adamw.zero_grad();
  lin.forward(x).pow(2).sum().backward();
  adamw.step();
  EXPECT_FALSE(equal(before, lin.parameters()[0].detach()));
  EXPECT_FALSE(lin.parameters()[0].requires_grad() == false);
}

// state_for looks where the previous lookup's successor was first; any order of lookups, and
// edits of `state` between them, still find each parameter's own entry.
EMBER_DEVICE_TEST(Optim, StateForFindsEntriesInAnyOrder) {
  std::vector<Tensor> ps = {zeros({1}).requires_grad_(), zeros({2}).requires_grad_(), zeros({3}).requires_grad_()};
  optim::SGD sgd(ps, {.lr = 0.1});
  for (int i : {0, 1, 2}) sgd.state_for(ps[i])["id"] = int64_t(i);
  for (int i : {2, 0, 1, 1, 0, 2, 0}) EXPECT_EQ(sgd.state_for(ps[i]).at("id").to_int(), i);
  sgd.state.erase(sgd.state.begin());  // ps[0]'s entry
  for (int i : {1, 2, 1}) EXPECT_EQ(sgd.state_for(ps[i]).at("id").to_int(), i);
  EXPECT_FALSE(sgd.state_for(ps[0]).contains("id"));  // a new, empty entry
  EXPECT_EQ(sgd.state.size(), 3u);
  sgd.state.clear();
  EXPECT_FALSE(sgd.state_for(ps[2]).contains("id"));
  EXPECT_EQ(sgd.state.size(), 1u);
}
