// The device-agnostic half of a second device, on every machine: with SimulatedCuda (CPU kernels
// behind Device::cuda(0)), ops, gradients and their seeds and zero-filled slots stay on the
// inputs' device, and results equal the CPU's bit for bit (same kernels). The real GPU kernels
// are tested against the CPU in test_cuda*.cpp on a machine with a GPU.
#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "support/simulated_device.h"

using namespace keras;

namespace {

TensorList grads_on(Device d, const std::function<Tensor(const TensorList&)>& loss, const std::vector<Shape>& shapes) {
  GradientTape tape;  // ops record only under a tape
  TensorList in;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor t = random::normal(shapes[i], 0.0, 1.0, 7 + i).to(d);
    t.set_requires_grad(true);
    in.push_back(t);
  }
  Tensor l = loss(in);
  TensorList g = tape.gradient(l, in);
  g.push_back(l);
  return g;
}

void expect_same(const TensorList& want, const TensorList& got, Device d) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(want[i].defined() && got[i].defined()) << "gradient " << i;
    EXPECT_EQ(got[i].device(), d) << "gradient " << i;
    EXPECT_EQ(got[i].to_vector<double>(), want[i].to_vector<double>()) << "gradient " << i;
  }
}

}  // namespace

TEST(SimulatedDevice, DenseGradientsStayOnTheDevice) {
  test_support::SimulatedCuda sim;
  if (!sim.active()) GTEST_SKIP() << "a real GPU is present: test_cuda covers it";
  auto loss = [](const TensorList& t) {
    Tensor h = ops::dense(t[0], t[1], t[2], "relu");
    Tensor y = ops::dense(h, t[3], t[4], "linear");
    Tensor e = ops::subtract(y, t[5]);
    return ops::mean(ops::multiply(e, e));
  };
  std::vector<Shape> shapes{{32, 6}, {6, 8}, {8}, {8, 2}, {2}, {32, 2}};
  expect_same(grads_on(Device::cpu(), loss, shapes), grads_on(Device::cuda(0), loss, shapes), Device::cuda(0));
}

TEST(SimulatedDevice, BroadcastAndUnusedOutputsStayOnTheDevice) {
  test_support::SimulatedCuda sim;
  if (!sim.active()) GTEST_SKIP() << "a real GPU is present: test_cuda covers it";
  auto loss = [](const TensorList& t) {
    Tensor z = ops::relu(ops::add(t[0], t[1]));
    return ops::sum(ops::divide(ops::multiply(z, t[2]), ops::add(ops::multiply(ops::relu(t[2]), 1.0), 2.0)));
  };
  std::vector<Shape> shapes{{4, 3, 5}, {3, 1}, {5}};
  expect_same(grads_on(Device::cpu(), loss, shapes), grads_on(Device::cuda(0), loss, shapes), Device::cuda(0));
}

TEST(SimulatedDevice, MixingDevicesIsADeviceErrorNamingBoth) {
  test_support::SimulatedCuda sim;
  if (!sim.active()) GTEST_SKIP() << "a real GPU is present: test_cuda covers it";
  Tensor a = Tensor::ones({2}, DType::float32, Device::cpu());
  Tensor b = Tensor::ones({2}, DType::float32, Device::cuda(0));
  try {
    ops::add(a, b);
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cpu"), std::string::npos) << m;
    EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
  }
}
