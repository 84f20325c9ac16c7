#include <gtest/gtest.h>

#include "perf/OperatorKind.h"

using namespace npusim::perf;

TEST(OperatorKind, MatrixOperators) {
  EXPECT_EQ(classifyOperator("aten::mm"), OperatorKind::kMatmul);
  EXPECT_EQ(classifyOperator("aten::matmul"), OperatorKind::kMatmul);
  EXPECT_EQ(classifyOperator("aten::mm.out"), OperatorKind::kMatmul);
  EXPECT_EQ(classifyOperator("aten::bmm"), OperatorKind::kBatchedMatmul);
  EXPECT_EQ(classifyOperator("aten::addmm"), OperatorKind::kAddMatmul);
  EXPECT_EQ(classifyOperator("aten::addmm_"), OperatorKind::kAddMatmul);
  EXPECT_EQ(classifyOperator("aten::baddbmm"), OperatorKind::kAddMatmul);
  EXPECT_EQ(classifyOperator("aten::linear"), OperatorKind::kLinear);
  EXPECT_EQ(classifyOperator("aten::convolution_overrideable"), OperatorKind::kConvolution);
  EXPECT_EQ(classifyOperator("aten::convolution"), OperatorKind::kConvolution);
  EXPECT_EQ(classifyOperator("aten::_convolution"), OperatorKind::kConvolution);
  EXPECT_EQ(classifyOperator("aten::conv2d"), OperatorKind::kConvolution);
  EXPECT_EQ(classifyOperator("aten::convolution_backward_overrideable"), OperatorKind::kConvolutionBackward);
  EXPECT_EQ(classifyOperator("aten::convolution_backward"), OperatorKind::kConvolutionBackward);
}

TEST(OperatorKind, AttentionOperators) {
  EXPECT_EQ(classifyOperator("aten::_scaled_dot_product_flash_attention"), OperatorKind::kAttention);
  EXPECT_EQ(classifyOperator("aten::scaled_dot_product_attention"), OperatorKind::kAttention);
  EXPECT_EQ(classifyOperator("aten::_scaled_dot_product_flash_attention_backward"),
            OperatorKind::kAttentionBackward);
  EXPECT_EQ(classifyOperator("npu::npu_fusion_attention"), OperatorKind::kAttention);
  EXPECT_EQ(classifyOperator("npu::npu_fusion_attention_grad"), OperatorKind::kAttentionBackward);
}

TEST(OperatorKind, VectorOperators) {
  EXPECT_EQ(classifyOperator("aten::add.Tensor"), OperatorKind::kElementwise);
  EXPECT_EQ(classifyOperator("aten::add_.Tensor"), OperatorKind::kElementwise);
  EXPECT_EQ(classifyOperator("aten::mul.Scalar"), OperatorKind::kElementwise);
  EXPECT_EQ(classifyOperator("aten::relu"), OperatorKind::kElementwise);
  EXPECT_EQ(classifyOperator("aten::relu_"), OperatorKind::kElementwise);
  EXPECT_EQ(classifyOperator("aten::threshold_backward"), OperatorKind::kElementwise);
  EXPECT_EQ(classifyOperator("aten::__and__.Tensor"), OperatorKind::kElementwise);
  EXPECT_EQ(classifyOperator("aten::gelu"), OperatorKind::kActivation);
  EXPECT_EQ(classifyOperator("aten::gelu_backward"), OperatorKind::kActivation);
  EXPECT_EQ(classifyOperator("aten::silu"), OperatorKind::kActivation);
  EXPECT_EQ(classifyOperator("aten::exp"), OperatorKind::kActivation);
  EXPECT_EQ(classifyOperator("aten::sum.dim_IntList"), OperatorKind::kReduction);
  EXPECT_EQ(classifyOperator("aten::mean.dim"), OperatorKind::kReduction);
  EXPECT_EQ(classifyOperator("aten::nll_loss_forward"), OperatorKind::kReduction);
  EXPECT_EQ(classifyOperator("aten::native_batch_norm"), OperatorKind::kNormalization);
  EXPECT_EQ(classifyOperator("aten::native_batch_norm_backward"), OperatorKind::kNormalization);
  EXPECT_EQ(classifyOperator("aten::native_layer_norm"), OperatorKind::kNormalization);
  EXPECT_EQ(classifyOperator("aten::native_layer_norm_backward"), OperatorKind::kNormalization);
  EXPECT_EQ(classifyOperator("npu::npu_rms_norm"), OperatorKind::kNormalization);
  EXPECT_EQ(classifyOperator("aten::_fused_rms_norm_backward"), OperatorKind::kNormalization);
  EXPECT_EQ(classifyOperator("aten::_softmax"), OperatorKind::kSoftmax);
  EXPECT_EQ(classifyOperator("aten::_log_softmax_backward_data"), OperatorKind::kSoftmax);
  EXPECT_EQ(classifyOperator("aten::max_pool2d_with_indices"), OperatorKind::kPooling);
  EXPECT_EQ(classifyOperator("aten::max_pool2d_with_indices_backward"), OperatorKind::kPooling);
  EXPECT_EQ(classifyOperator("aten::_adaptive_avg_pool2d"), OperatorKind::kPooling);
}

TEST(OperatorKind, MovementIndexingAndOthers) {
  EXPECT_EQ(classifyOperator("aten::copy_"), OperatorKind::kDataMovement);
  EXPECT_EQ(classifyOperator("aten::_to_copy"), OperatorKind::kDataMovement);
  EXPECT_EQ(classifyOperator("aten::clone"), OperatorKind::kDataMovement);
  EXPECT_EQ(classifyOperator("aten::cat"), OperatorKind::kDataMovement);
  EXPECT_EQ(classifyOperator("aten::permute_copy"), OperatorKind::kDataMovement);
  EXPECT_EQ(classifyOperator("aten::index.Tensor"), OperatorKind::kIndexing);
  EXPECT_EQ(classifyOperator("aten::index_put_"), OperatorKind::kIndexing);
  EXPECT_EQ(classifyOperator("aten::embedding"), OperatorKind::kIndexing);
  EXPECT_EQ(classifyOperator("aten::embedding_dense_backward"), OperatorKind::kIndexing);
  EXPECT_EQ(classifyOperator("aten::nonzero"), OperatorKind::kIndexing);
  EXPECT_EQ(classifyOperator("aten::sort"), OperatorKind::kSort);
  EXPECT_EQ(classifyOperator("aten::topk"), OperatorKind::kSort);
  EXPECT_EQ(classifyOperator("aten::_unique2"), OperatorKind::kSort);
  EXPECT_EQ(classifyOperator("aten::uniform_"), OperatorKind::kRandom);
  EXPECT_EQ(classifyOperator("aten::native_dropout"), OperatorKind::kRandom);
  EXPECT_EQ(classifyOperator("aten::native_dropout_backward"), OperatorKind::kElementwise);
  EXPECT_EQ(classifyOperator("aten::view"), OperatorKind::kView);
  EXPECT_EQ(classifyOperator("aten::_reshape_alias"), OperatorKind::kView);
  EXPECT_EQ(classifyOperator("aten::as_strided"), OperatorKind::kView);
  EXPECT_EQ(classifyOperator("aten::transpose.int"), OperatorKind::kView);
  EXPECT_EQ(classifyOperator("aten::empty.memory_format"), OperatorKind::kView);
  EXPECT_EQ(classifyOperator("aten::empty_strided"), OperatorKind::kView);
  EXPECT_EQ(classifyOperator("aten::fill_.Scalar"), OperatorKind::kFactory);
  EXPECT_EQ(classifyOperator("aten::zero_"), OperatorKind::kFactory);
  EXPECT_EQ(classifyOperator("aten::arange.start_out"), OperatorKind::kFactory);
  EXPECT_EQ(classifyOperator("aten::_fused_adam_"), OperatorKind::kOptimizerFused);
  EXPECT_EQ(classifyOperator("aten::_fused_adamw_"), OperatorKind::kOptimizerFused);
  EXPECT_EQ(classifyOperator("aten::_foreach_add_.List"), OperatorKind::kOptimizerFused);
  EXPECT_EQ(classifyOperator("npu::npu_apply_adam"), OperatorKind::kOptimizerFused);
}

TEST(OperatorKind, NameFormsAndUnknowns) {
  EXPECT_EQ(classifyOperator("mm"), OperatorKind::kMatmul);  // no namespace
  EXPECT_EQ(classifyOperator("aten::some_new_op"), OperatorKind::kOther);
  EXPECT_EQ(classifyOperator(""), OperatorKind::kOther);
  EXPECT_EQ(classifyOperator("aten::"), OperatorKind::kOther);
  EXPECT_EQ(classifyOperator("_"), OperatorKind::kOther);
  // An unknown backward costs like its forward.
  EXPECT_EQ(classifyOperator("aten::hardshrink_backward"), OperatorKind::kElementwise);
  EXPECT_EQ(classifyOperator("aten::_embedding_bag_backward"), OperatorKind::kIndexing);
  EXPECT_EQ(operatorKindName(OperatorKind::kConvolutionBackward), "convolution_backward");
}
