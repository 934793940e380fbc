// The RNN op on oneDNN (inference, and training: forward and backward)
// against its own loop over the BLAS (float32): LSTM and the plain RNNs, one
// and two layers, one and two directions; a backward after an inference
// is refused; and the GPU's mapping of threads to a step's units.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "ops/nn/rnn-inl.h"
#include "ops/nn/rnn_loop-inl.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::CheckClose;
using tessera::test::ErrorOf;
using tessera::test::RandomArray;

namespace {

struct Case {
  std::string mode;
  int64_t layers, dirs;
};

int64_t Gates(const std::string& mode) {
  return mode == "lstm" ? 4 : mode == "gru" ? 3 : 1;
}

// Forward in inference, on oneDNN and through the forced loop; every output
// must agree.
void CheckInferenceAgainstLoop(const Case& c) {
  INFO(c.mode << ", " << c.layers << " layers, " << c.dirs << " directions");
  const int64_t T = 6, N = 3, I = 5, H = 4, G = Gates(c.mode);
  int64_t P = 0;
  for (int64_t l = 0; l < c.layers; ++l)
    P += c.dirs * (G * H * ((l == 0 ? I : c.dirs * H) + H) + 2 * G * H);
  std::vector<NDArray> in{RandomArray({T, N, I}, -1, 1, DType::kFloat32, 1),
                          RandomArray({P}, -0.5, 0.5, DType::kFloat32, 2),
                          RandomArray({c.layers * c.dirs, N, H}, -1, 1, DType::kFloat32, 3)};
  if (c.mode == "lstm")
    in.push_back(RandomArray({c.layers * c.dirs, N, H}, -1, 1, DType::kFloat32, 4));
  const op::ParamDict p{{"mode", c.mode},
                        {"state_size", std::to_string(H)},
                        {"num_layers", std::to_string(c.layers)},
                        {"bidirectional", c.dirs == 2 ? "true" : "false"},
                        {"state_outputs", "true"}};
  const auto attrs = MakeAttrs("RNN", p);
  CHECK(op::RnnDnnlInferenceApplies(op::RnnParams(*attrs), DType::kFloat32));
  std::vector<NDArray> fast, loop;
  Invoke(attrs, in, &fast);
  for (NDArray& a : fast) a.WaitToRead();
  const bool old = op::SetRnnForceLoop(true);
  Invoke(MakeAttrs("RNN", p), in, &loop);
  for (NDArray& a : loop) a.WaitToRead();  // the flag is read when the op runs
  op::SetRnnForceLoop(old);
  const size_t visible = c.mode == "lstm" ? 3 : 2;
  for (size_t k = 0; k < visible; ++k) {
    INFO("output " << k);
    CHECK(CheckClose(fast[k], loop[k].ToVector(), 1e-5, 1e-5));
  }
}

// Forward in training and backward, on oneDNN and through the forced loop;
// every output and gradient must agree.
void CheckTrainingAgainstLoop(const Case& c) {
  INFO(c.mode << ", " << c.layers << " layers, " << c.dirs << " directions (training)");
  const int64_t T = 5, N = 3, I = 4, H = 3, G = Gates(c.mode);
  int64_t P = 0;
  for (int64_t l = 0; l < c.layers; ++l)
    P += c.dirs * (G * H * ((l == 0 ? I : c.dirs * H) + H) + 2 * G * H);
  const bool lstm = c.mode == "lstm";
  std::vector<NDArray> in{RandomArray({T, N, I}, -1, 1, DType::kFloat32, 11),
                          RandomArray({P}, -0.5, 0.5, DType::kFloat32, 12),
                          RandomArray({c.layers * c.dirs, N, H}, -1, 1, DType::kFloat32, 13)};
  if (lstm) in.push_back(RandomArray({c.layers * c.dirs, N, H}, -1, 1, DType::kFloat32, 14));
  const op::ParamDict p{{"mode", c.mode},
                        {"state_size", std::to_string(H)},
                        {"num_layers", std::to_string(c.layers)},
                        {"bidirectional", c.dirs == 2 ? "true" : "false"},
                        {"state_outputs", "true"}};
  std::vector<NDArray> ograds{RandomArray({T, N, c.dirs * H}, -1, 1, DType::kFloat32, 15),
                              RandomArray({c.layers * c.dirs, N, H}, -1, 1, DType::kFloat32, 16)};
  if (lstm) ograds.push_back(RandomArray({c.layers * c.dirs, N, H}, -1, 1, DType::kFloat32, 17));
  auto run = [&](std::vector<NDArray>* outs, std::vector<NDArray>* grads) {
    InvokeOptions train;
    train.is_train = true;
    Invoke(MakeAttrs("RNN", p), in, outs, train);
    std::vector<NDArray> bin = ograds;
    for (const NDArray& a : in) bin.push_back(a);
    bin.push_back(outs->back());
    Invoke(MakeAttrs("_backward_RNN", p), bin, grads);
    for (NDArray& a : *outs) a.WaitToRead();
    for (NDArray& a : *grads) a.WaitToRead();
  };
  std::vector<NDArray> fast, fast_g, loop, loop_g;
  run(&fast, &fast_g);
  const bool old = op::SetRnnForceLoop(true);
  run(&loop, &loop_g);
  op::SetRnnForceLoop(old);
  for (size_t k = 0; k < ograds.size(); ++k) {
    INFO("output " << k);
    CHECK(CheckClose(fast[k], loop[k].ToVector(), 1e-4, 1e-5));
  }
  for (size_t k = 0; k < loop_g.size(); ++k) {
    INFO("gradient " << k);
    CHECK(CheckClose(fast_g[k], loop_g[k].ToVector(), 1e-4, 1e-4));
  }
}

}  // namespace

TEST_CASE("RNN training on oneDNN agrees with the loop, values and gradients") {
  // GRUs train on the loop (oneDNN's GRU backward measured slower).
  CHECK_FALSE(op::RnnDnnlTrainingApplies(op::RnnParams(
      *MakeAttrs("RNN", {{"mode", "gru"}, {"state_size", "2"}, {"num_layers", "1"}}))));
  for (const std::string mode : {"lstm", "rnn_tanh", "rnn_relu"})
    for (int64_t layers : {1, 2})
      for (int64_t dirs : {1, 2}) CheckTrainingAgainstLoop({mode, layers, dirs});
}

TEST_CASE("RNN inference on oneDNN agrees with the loop") {
  for (const std::string mode : {"lstm", "gru", "rnn_tanh", "rnn_relu"})
    for (int64_t layers : {1, 2})
      for (int64_t dirs : {1, 2}) CheckInferenceAgainstLoop({mode, layers, dirs});
}

TEST_CASE("RNN backward after an inference forward is an error naming the op") {
  const int64_t T = 2, N = 1, I = 2, H = 2, P = 4 * H * (I + H) + 2 * 4 * H;
  std::vector<NDArray> in{RandomArray({T, N, I}, -1, 1, DType::kFloat32, 1),
                          RandomArray({P}, -0.5, 0.5, DType::kFloat32, 2),
                          RandomArray({1, N, H}, -1, 1, DType::kFloat32, 3),
                          RandomArray({1, N, H}, -1, 1, DType::kFloat32, 4)};
  const op::ParamDict p{{"mode", "lstm"}, {"state_size", "2"}, {"num_layers", "1"}};
  std::vector<NDArray> out;
  Invoke(MakeAttrs("RNN", p), in, &out);
  std::vector<NDArray> bin{RandomArray({T, N, H}, -1, 1, DType::kFloat32, 5)};
  for (const NDArray& a : in) bin.push_back(a);
  bin.push_back(out.back());
  const std::string err = ErrorOf([&] {
    std::vector<NDArray> g;
    Invoke(MakeAttrs("_backward_RNN", p), bin, &g);
    for (NDArray& a : g) a.WaitToRead();
  });
  CHECK(err.find("_backward_RNN") != std::string::npos);
  CHECK(err.find("inference mode") != std::string::npos);
}

namespace {

// Counts the visits of each unit (n, j).
struct CountUnits {
  static void Row(int64_t n, int64_t j0, int64_t j1, int64_t H, int* seen) {
    CHECK(0 <= j0);
    CHECK(j0 < j1);
    CHECK(j1 <= H);
    for (int64_t j = j0; j < j1; ++j) ++seen[n * H + j];
  }
};

}  // namespace

TEST_CASE("the GPU's threads map to a step's units: every unit once") {
  for (const int64_t H : {1, 3, 7, 64}) {
    const int64_t N = 5, n = N * H;
    std::vector<int> seen(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) op::rnn::UnitElements<CountUnits>::Map(i, H, seen.data());
    CHECK(seen == std::vector<int>(static_cast<size_t>(n), 1));
  }
}
