/* kernel_gemm.cpp: func_id 2, c = a * b, on PTO-ISA cube tiles.
 * tensors[0] = a (IN, float32, kM x kK row-major), tensors[1] = b (IN,
 * float32, kK x kN), tensors[2] = c (OUT, float32, kM x kN). The operands
 * go through L1 (Mat tiles), TMOV into the Left and Right tiles, TMATMUL
 * into the accumulator, and TSTORE. The vadd orchestration does not call
 * it: `ptojit build` compiles and caches it beside the vector kernels. */
#include "vadd_pto.h"

using namespace pto;

constexpr int kM = 16;
constexpr int kK = 16;
constexpr int kN = 16;

namespace {

using GlobalA = GlobalTensor<float, Shape<1, 1, 1, kM, kK>, Stride<kM * kK, kM * kK, kM * kK, kK, 1>>;
using GlobalB = GlobalTensor<float, Shape<1, 1, 1, kK, kN>, Stride<kK * kN, kK * kN, kK * kN, kN, 1>>;
using GlobalC = GlobalTensor<float, Shape<1, 1, 1, kM, kN>, Stride<kM * kN, kM * kN, kM * kN, kN, 1>>;

using MatA = Tile<TileType::Mat, float, kM, kK, BLayout::ColMajor, kM, kK, SLayout::RowMajor, 512>;
using MatB = Tile<TileType::Mat, float, kK, kN, BLayout::ColMajor, kK, kN, SLayout::RowMajor, 512>;
using Left = TileLeft<float, kM, kK, kM, kK>;
using Right = TileRight<float, kK, kN, kK, kN>;
using Acc = TileAcc<float, kM, kN, kM, kN>;

void gemm(float *c, float *a, float *b)
{
    GlobalA ag(a);
    GlobalB bg(b);
    GlobalC cg(c);
    MatA amat;
    MatB bmat;
    TASSIGN(amat, 0x0);
    TASSIGN(bmat, 0x10000);
    Left at;
    Right bt;
    Acc ct;
    TASSIGN(at, 0x0);
    TASSIGN(bt, 0x0);
    TASSIGN(ct, 0x0);
    TLOAD(amat, ag);
    TLOAD(bmat, bg);
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
    TMOV(at, amat);
    TMOV(bt, bmat);
    set_flag(PIPE_MTE1, PIPE_M, EVENT_ID0);
    wait_flag(PIPE_MTE1, PIPE_M, EVENT_ID0);
    TMATMUL(ct, at, bt);
    set_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
    wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
    TSTORE(cg, ct);
}

} // namespace

extern "C" int32_t ptojit_kernel(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count != 3) {
        return 1;
    }
    const ptojit_tensor *a = &args->tensors[0];
    const ptojit_tensor *b = &args->tensors[1];
    const ptojit_tensor *c = &args->tensors[2];
    if (vadd_elems(a) != kM * kK || vadd_elems(b) != kK * kN || vadd_elems(c) != kM * kN) {
        return 2;
    }
    gemm(static_cast<float *>(c->data), static_cast<float *>(a->data), static_cast<float *>(b->data));
    return 0;
}
