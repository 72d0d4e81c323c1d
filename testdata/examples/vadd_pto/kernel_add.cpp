/* kernel_add.cpp: func_id 0, z = x + y, on PTO-ISA tiles.
 * tensors[0] = x (IN), tensors[1] = y (IN), tensors[2] = z (OUT), float32
 * vectors of equal length. Each full row of kTileCols elements goes through
 * TLOAD, TADD and TSTORE; the last, partial row uses a tile whose valid
 * width is the rest. */
#include "vadd_pto.h"

using namespace pto;

namespace {

using Row = Tile<TileType::Vec, float, 1, kTileCols, BLayout::RowMajor, -1, -1>;
using RowShape = Shape<1, 1, 1, 1, -1>;
using RowStride = Stride<1, 1, 1, -1, 1>;
using RowGlobal = GlobalTensor<float, RowShape, RowStride>;

void add_row(float *z, const float *x, const float *y, int cols)
{
    Row xt(1, cols);
    Row yt(1, cols);
    Row zt(1, cols);
    TASSIGN(xt, 0x0);
    TASSIGN(yt, 0x1000);
    TASSIGN(zt, 0x2000);
    RowGlobal xg(const_cast<float *>(x), RowShape(cols), RowStride(cols));
    RowGlobal yg(const_cast<float *>(y), RowShape(cols), RowStride(cols));
    RowGlobal zg(z, RowShape(cols), RowStride(cols));
    TLOAD(xt, xg);
    TLOAD(yt, yg);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TADD(zt, xt, yt);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(zg, zt);
}

} // namespace

extern "C" int32_t ptojit_kernel(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count != 3) {
        return 1;
    }
    const ptojit_tensor *x = &args->tensors[0];
    const ptojit_tensor *y = &args->tensors[1];
    const ptojit_tensor *z = &args->tensors[2];
    uint64_t n = vadd_elems(z);
    if (vadd_elems(x) != n || vadd_elems(y) != n) {
        return 2;
    }
    const float *xs = static_cast<const float *>(x->data);
    const float *ys = static_cast<const float *>(y->data);
    float *zs = static_cast<float *>(z->data);
    for (uint64_t i = 0; i < n; i += kTileCols) {
        int cols = static_cast<int>(n - i < kTileCols ? n - i : kTileCols);
        add_row(zs + i, xs + i, ys + i, cols);
    }
    return 0;
}
