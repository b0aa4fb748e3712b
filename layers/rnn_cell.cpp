#include "layers/rnn_cell.h"

#include "backend/ops.h"

namespace keras {

void RNNCell::reset_dropout_masks() {
  input_masks_.clear();
  recurrent_masks_.clear();
}

Shape RNNCell::step_output_shape(const Shape& step) const { return {step[0], output_size()}; }

std::vector<Shape> RNNCell::state_shapes(const Shape& step) const {
  std::vector<Shape> out;
  for (int64_t n : state_size()) out.push_back({step[0], n});
  return out;
}

TensorList RNNCell::initial_state(const Shape& step, DType dtype) const {
  TensorList out;
  for (const Shape& s : state_shapes(step)) out.push_back(Tensor::zeros(s, dtype));
  return out;
}

const TensorList& RNNCell::dropout_masks(TensorList& slot, const Tensor& like, double rate, int count,
                                          std::optional<int64_t> seed) {
  if (slot.empty() && rate > 0.0 && rate < 1.0) {
    Generator& gen = generator(seed ? std::optional<uint64_t>(static_cast<uint64_t>(*seed)) : std::nullopt);
    for (int i = 0; i < count; ++i) slot.push_back(ops::dropout(Tensor::ones(like.shape(), DType::float32, like.device()), rate, gen));
  }
  return slot;
}

Tensor apply_dropout_mask(const Tensor& x, const TensorList& masks, size_t i) {
  if (masks.empty()) return x;
  return ops::multiply(x, masks[masks.size() == 1 ? 0 : i]);
}

void RNNCell::validate_input(const std::vector<Shape>& shapes) const {
  const size_t n = state_size().size();
  // One shape: the RNN building its cell; 1 + n: the cell called on its own.
  if (shapes.size() != 1 && shapes.size() != 1 + n)
    fail<ShapeError>(where(), "the step input and " + std::to_string(n) + " state(s)", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() != 2 || shapes[0][1] < 1) fail<ShapeError>(where(), "a step input (batch, features)", "shape " + shape_str(shapes[0]));
  for (size_t i = 0; i + 1 < shapes.size(); ++i)
    if (shapes[1 + i].size() != 2 || shapes[1 + i][1] != state_size()[i])
      fail<ShapeError>(where() + " state " + std::to_string(i), "shape (batch, " + std::to_string(state_size()[i]) + ")",
                       shape_str(shapes[1 + i]));
}

TensorList RNNCell::call(const TensorList& inputs, const CallContext& ctx) {
  auto [output, states] = step(inputs[0], TensorList(inputs.begin() + 1, inputs.end()), ctx.training);
  reset_dropout_masks();  // a lone call is a sequence of one step
  TensorList out{output};
  out.insert(out.end(), states.begin(), states.end());
  return out;
}

std::vector<Shape> RNNCell::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const int64_t batch = shapes[0][0];
  std::vector<Shape> out{{batch, output_size()}};
  for (int64_t n : state_size()) out.push_back({batch, n});
  return out;
}

}  // namespace keras
