/* The two-phase contract of the aclnn API and its objects, as CANN documents them: the workspace
 * size and executor outputs, an executor runs once unless made repeatable, repeatable executors
 * take new tensor addresses, destroyed and made-up handles are refused, device memory is
 * required, the stream is checked, the recent error message says why; the object calls
 * (aclCreateTensor and its getters, aclInitTensor, arrays, lists). */
#include <string>

#include "aclnn_support.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_mul.h"

static void ExpectRecentError(const char *fragment) {
    const char *text = aclGetRecentErrMsg();
    if (text == nullptr || std::string(text).find(fragment) == std::string::npos) {
        fprintf(stderr, "recent error \"%s\" lacks \"%s\"\n", text != nullptr ? text : "(none)", fragment);
        exit(1);
    }
}

static void PhaseOne(aclrtStream stream) {
    DeviceTensor<float> a(std::vector<float>{1, 2, 3, 4}, {4}, ACL_FLOAT), out({4}, ACL_FLOAT);
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    EXPECT_CODE(ACLNN_ERR_PARAM_NULLPTR, aclnnMulGetWorkspaceSize(a.tensor, a.tensor, out.tensor, nullptr, &executor));
    EXPECT_CODE(ACLNN_ERR_PARAM_NULLPTR, aclnnMulGetWorkspaceSize(a.tensor, a.tensor, out.tensor, &size, nullptr));
    ExpectRecentError("executor must not be nullptr");
    /* Element-wise operators need no workspace. */
    size = 12345;
    CHECK_ACL(aclnnMulGetWorkspaceSize(a.tensor, a.tensor, out.tensor, &size, &executor));
    EXPECT_TRUE(size == 0 && executor != nullptr);
    CHECK_ACL(aclnnMul(nullptr, 0, executor, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    ExpectClose("Mul", out.Read(), std::vector<float>{1, 4, 9, 16}, 0, 0);
    /* Phase two without phase one, twice, or with another operator's executor. */
    EXPECT_CODE(ACLNN_ERR_PARAM_NULLPTR, aclnnMul(nullptr, 0, nullptr, stream));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclnnMul(nullptr, 0, executor, stream));
    ExpectRecentError("EZ1001");
    CHECK_ACL(aclnnMulGetWorkspaceSize(a.tensor, a.tensor, out.tensor, &size, &executor));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclnnAdd(nullptr, 0, executor, stream));
    ExpectRecentError("made by aclnnMulGetWorkspaceSize");
    CHECK_ACL(aclnnMul(nullptr, 0, executor, stream)); /* still its own operator's to run */
    /* A non-repeatable executor is released by its run: destroying it is refused. */
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclDestroyAclOpExecutor(executor));
    EXPECT_CODE(ACLNN_ERR_INNER_NULLPTR, aclDestroyAclOpExecutor(nullptr));
    EXPECT_CODE(ACLNN_ERR_INNER_NULLPTR, aclSetAclOpExecutorRepeatable(nullptr));
}

static void RepeatableExecutor(aclrtStream stream) {
    DeviceTensor<float> x(std::vector<float>{1, 2, 3}, {3}, ACL_FLOAT), y(std::vector<float>{10, 20, 30}, {3}, ACL_FLOAT);
    DeviceTensor<float> z(std::vector<float>{100, 200, 300}, {3}, ACL_FLOAT);
    DeviceTensor<float> out({3}, ACL_FLOAT), out2({3}, ACL_FLOAT);
    float one = 1.0f;
    aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_ACL(aclnnAddGetWorkspaceSize(x.tensor, y.tensor, alpha, out.tensor, &size, &executor));
    CHECK_ACL(aclSetAclOpExecutorRepeatable(executor));
    CHECK_ACL(aclnnAdd(nullptr, size, executor, stream));
    CHECK_ACL(aclnnAdd(nullptr, size, executor, stream)); /* runs again */
    CHECK_ACL(aclrtSynchronizeStream(stream));
    ExpectClose("run 1", out.Read(), std::vector<float>{11, 22, 33}, 0, 0);
    /* New addresses: the second input (aclSetInputTensorAddr index 1), then the output
     * (aclSetOutputTensorAddr 0), then the first input through the all-tensor index. */
    CHECK_ACL(aclSetInputTensorAddr(executor, 1, y.tensor, z.address));
    void *address = nullptr;
    CHECK_ACL(aclGetRawTensorAddr(y.tensor, &address));
    EXPECT_TRUE(address == z.address);
    CHECK_ACL(aclnnAdd(nullptr, size, executor, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    ExpectClose("run 2", out.Read(), std::vector<float>{101, 202, 303}, 0, 0);
    CHECK_ACL(aclSetOutputTensorAddr(executor, 0, out.tensor, out2.address));
    CHECK_ACL(aclSetTensorAddr(executor, 0, x.tensor, y.address));
    CHECK_ACL(aclnnAdd(nullptr, size, executor, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    ExpectClose("run 3", out2.Read(), std::vector<float>{110, 220, 330}, 0, 0);
    /* Index out of range, a tensor that is not at the index, no executor, no tensor. */
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclSetTensorAddr(executor, 3, out.tensor, out.address));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclSetInputTensorAddr(executor, 2, x.tensor, x.address));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclSetInputTensorAddr(executor, 0, y.tensor, x.address));
    EXPECT_CODE(ACLNN_ERR_INNER_NULLPTR, aclSetTensorAddr(nullptr, 0, x.tensor, x.address));
    EXPECT_CODE(ACLNN_ERR_INNER_NULLPTR, AclSetTensorAddr(executor, 0, nullptr, x.address));
    /* Put the tensors back where their memory is, then destroy the executor: it is gone. */
    CHECK_ACL(aclSetTensorAddr(executor, 0, x.tensor, x.address));
    CHECK_ACL(aclSetTensorAddr(executor, 1, y.tensor, y.address));
    CHECK_ACL(aclSetTensorAddr(executor, 2, out.tensor, out.address));
    CHECK_ACL(aclDestroyAclOpExecutor(executor));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclnnAdd(nullptr, size, executor, stream));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclDestroyAclOpExecutor(executor));
    aclDestroyScalar(alpha);
}

static void DeviceMemoryAndStreams(aclrtStream stream) {
    std::vector<float> host = {1, 2, 3, 4};
    std::vector<int64_t> shape = {4};
    DeviceTensor<float> out({4}, ACL_FLOAT);
    /* An aclTensor over host memory: phase one cannot tell, phase two refuses it. */
    aclTensor *onHost = aclCreateTensor(shape.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, shape.data(), 1,
                                        host.data());
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_ACL(aclnnMulGetWorkspaceSize(onHost, onHost, out.tensor, &size, &executor));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclnnMul(nullptr, size, executor, stream));
    ExpectRecentError("is not device memory");
    /* No address at all. */
    aclTensor *unset = aclCreateTensor(shape.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, shape.data(), 1, nullptr);
    CHECK_ACL(aclnnMulGetWorkspaceSize(unset, unset, out.tensor, &size, &executor));
    EXPECT_CODE(ACLNN_ERR_PARAM_NULLPTR, aclnnMul(nullptr, size, executor, stream));
    /* A stream that is not a stream: the runtime refuses it. */
    DeviceTensor<float> a(host, shape, ACL_FLOAT);
    CHECK_ACL(aclnnMulGetWorkspaceSize(a.tensor, a.tensor, out.tensor, &size, &executor));
    int notAStream = 0;
    EXPECT_CODE(ACLNN_ERR_RUNTIME_ERROR, aclnnMul(nullptr, size, executor, &notAStream));
    /* On a stream of its own, the operator takes simulated time between two events; the
     * default stream (nullptr) works too. */
    aclrtStream second = nullptr;
    CHECK_ACL(aclrtCreateStream(&second));
    aclrtEvent start = nullptr, end = nullptr;
    CHECK_ACL(aclrtCreateEvent(&start));
    CHECK_ACL(aclrtCreateEvent(&end));
    DeviceTensor<float> big({1 << 20}, ACL_FLOAT), bigOut({1 << 20}, ACL_FLOAT);
    CHECK_ACL(aclrtRecordEvent(start, second));
    RUN_ACLNN(aclnnMul, second, big.tensor, big.tensor, bigOut.tensor);
    CHECK_ACL(aclrtRecordEvent(end, second));
    CHECK_ACL(aclrtSynchronizeEvent(end));
    float ms = 0;
    CHECK_ACL(aclrtEventElapsedTime(&ms, start, end));
    EXPECT_TRUE(ms > 0.001f && ms < 10.0f);
    RUN_ACLNN(aclnnMul, nullptr, a.tensor, a.tensor, out.tensor);
    ExpectClose("Mul on the default stream", out.Read(), std::vector<float>{1, 4, 9, 16}, 0, 0);
    CHECK_ACL(aclrtDestroyEvent(start));
    CHECK_ACL(aclrtDestroyEvent(end));
    CHECK_ACL(aclrtDestroyStream(second));
    aclDestroyTensor(onHost);
    aclDestroyTensor(unset);
}

static void Objects(void) {
    std::vector<int64_t> view = {2, 3}, strides = {1, 2}, storage = {6};
    int dummy = 0;
    aclTensor *t = aclCreateTensor(view.data(), 2, ACL_FLOAT16, strides.data(), 1, ACL_FORMAT_ND, storage.data(), 1,
                                   &dummy);
    EXPECT_TRUE(t != nullptr);
    int64_t *dims = nullptr;
    uint64_t count = 0;
    CHECK_ACL(aclGetViewShape(t, &dims, &count));
    EXPECT_TRUE(count == 2 && dims[0] == 2 && dims[1] == 3);
    delete[] dims;
    CHECK_ACL(aclGetViewStrides(t, &dims, &count));
    EXPECT_TRUE(count == 2 && dims[0] == 1 && dims[1] == 2);
    delete[] dims;
    CHECK_ACL(aclGetStorageShape(t, &dims, &count));
    EXPECT_TRUE(count == 1 && dims[0] == 6);
    delete[] dims;
    int64_t offset = 0;
    CHECK_ACL(aclGetViewOffset(t, &offset));
    EXPECT_TRUE(offset == 1);
    aclDataType type = ACL_DT_UNDEFINED;
    CHECK_ACL(aclGetDataType(t, &type));
    EXPECT_TRUE(type == ACL_FLOAT16);
    aclFormat format = ACL_FORMAT_UNDEFINED;
    CHECK_ACL(aclGetFormat(t, &format));
    EXPECT_TRUE(format == ACL_FORMAT_ND);
    std::vector<int64_t> flat = {6};
    CHECK_ACL(aclInitTensor(t, flat.data(), 1, ACL_INT32, nullptr, 0, ACL_FORMAT_ND, flat.data(), 1, &dummy));
    CHECK_ACL(aclGetViewStrides(t, &dims, &count));
    EXPECT_TRUE(count == 1 && dims[0] == 1); /* nullptr strides: contiguous */
    delete[] dims;
    EXPECT_CODE(ACLNN_ERR_PARAM_NULLPTR, aclGetViewShape(t, nullptr, &count));
    /* Negative dimensions or strides, a type without tensors: nullptr, with the reason. */
    std::vector<int64_t> negative = {2, -1};
    EXPECT_TRUE(aclCreateTensor(negative.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, &dummy) == nullptr);
    ExpectRecentError("negative");
    EXPECT_TRUE(aclCreateTensor(view.data(), 2, ACL_STRING, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, &dummy) == nullptr);
    /* Arrays and scalars. */
    int64_t values[] = {3, 1, 4};
    aclIntArray *ints = aclCreateIntArray(values, 3);
    CHECK_ACL(aclGetIntArraySize(ints, &count));
    EXPECT_TRUE(count == 3);
    float floats[] = {0.5f};
    aclFloatArray *fa = aclCreateFloatArray(floats, 1);
    bool flags[] = {true, false};
    aclBoolArray *ba = aclCreateBoolArray(flags, 2);
    CHECK_ACL(aclGetBoolArraySize(ba, &count));
    EXPECT_TRUE(count == 2);
    EXPECT_TRUE(aclCreateScalar(nullptr, ACL_FLOAT) == nullptr);
    /* A list owns its tensors: destroying it destroys them. */
    aclTensor *member = aclCreateTensor(flat.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, flat.data(), 1, &dummy);
    const aclTensor *members[] = {t, member};
    aclTensorList *list = aclCreateTensorList(members, 2);
    CHECK_ACL(aclGetTensorListSize(list, &count));
    EXPECT_TRUE(count == 2);
    CHECK_ACL(aclDestroyTensorList(list));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclDestroyTensor(member));
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclDestroyTensorList(list));
    CHECK_ACL(aclDestroyIntArray(ints));
    CHECK_ACL(aclDestroyFloatArray(fa));
    CHECK_ACL(aclDestroyBoolArray(ba));
    EXPECT_CODE(ACLNN_ERR_PARAM_NULLPTR, aclDestroyScalar(nullptr));
}

static void DeadAndPrivateHandles(void) {
    DeviceTensor<float> a({4}, ACL_FLOAT), out({4}, ACL_FLOAT);
    std::vector<int64_t> shape = {4};
    aclTensor *dead = aclCreateTensor(shape.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, shape.data(), 1, a.address);
    CHECK_ACL(aclDestroyTensor(dead));
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    EXPECT_CODE(ACLNN_ERR_PARAM_INVALID, aclnnMulGetWorkspaceSize(dead, a.tensor, out.tensor, &size, &executor));
    ExpectRecentError("not a live object");
    EXPECT_TRUE(aclGetRecentErrMsg() == nullptr); /* reading the message cleared it */
    /* A fractal (FRACTAL_NZ) tensor: npusim lays tensors out in the ND-style formats only. */
    aclTensor *fractal = aclCreateTensor(shape.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_FRACTAL_NZ, shape.data(), 1,
                                         a.address);
    EXPECT_PHASE_ONE(ACLNN_ERR_PARAM_INVALID, aclnnMul, fractal, a.tensor, out.tensor);
    aclDestroyTensor(fractal);
}

int main(void) {
    aclrtStream stream = SetUp();
    PhaseOne(stream);
    RepeatableExecutor(stream);
    DeviceMemoryAndStreams(stream);
    Objects();
    DeadAndPrivateHandles();
    TearDown(stream);
    printf("aclnn_contract: PASS\n");
    return 0;
}
