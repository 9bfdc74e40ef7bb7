"""One histogram update of the GBDT case in one vector operation (compiled, numba).

A gradient-boosting histogram bin holds two sums side by side, ``hist[..., b, 0]`` (the
gradients) and ``hist[..., b, 1]`` (the hessians). The kernels add one row's pair to one
bin per column: two loads, two additions and two stores per update, and the stores bound
their speed. :func:`add_pair` makes it one two-lane load, addition and store; LLVM does
not find this itself, as it cannot prove from numba's strided indexing that the two sums
are adjacent. Each lane is the same IEEE addition as before, so every sum is the same to
the last bit.

On arrays that are not C-contiguous float64 (where the two sums need not be adjacent),
and when numba's JIT is disabled, :func:`add_pair` is the two scalar additions.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload


def add_pair(hist, index, a, b):
    """``hist[index + (0,)] += a`` and ``hist[index + (1,)] += b``: ``index`` is a tuple
    of ``hist.ndim - 1`` integers, the last axis of ``hist`` has at least two entries.
    IN/OUT: ``hist``."""
    hist[index + (0,)] += a
    hist[index + (1,)] += b


def _vector_applies(hist, index) -> bool:
    return (isinstance(hist, types.Array) and hist.layout == "C"
            and hist.dtype == types.float64 and isinstance(index, types.BaseTuple)
            and len(index) == hist.ndim - 1
            and all(isinstance(t, types.Integer) for t in index))


@intrinsic
def _add_pair_vector(typingctx, hist, index, a, b):  # pragma: no cover
    """:func:`add_pair` as one ``<2 x double>`` load, fadd and store."""
    if not _vector_applies(hist, index):
        return None
    sig = types.void(hist, index, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        hist_ty, index_ty = signature.args[0], signature.args[1]
        arr = context.make_array(hist_ty)(context, builder, args[0])
        parts = cgutils.unpack_tuple(builder, args[1], len(index_ty))
        inds = [context.cast(builder, v, t, types.intp)
                for v, t in zip(parts, index_ty, strict=True)]
        inds.append(context.get_constant(types.intp, 0))
        ptr = cgutils.get_item_pointer2(
            context, builder, arr.data, cgutils.unpack_tuple(builder, arr.shape),
            cgutils.unpack_tuple(builder, arr.strides), hist_ty.layout, inds,
            wraparound=False, boundscheck=False)
        pair = ir.VectorType(ir.DoubleType(), 2)
        pair_ptr = builder.bitcast(ptr, pair.as_pointer())
        lane = ir.IntType(32)
        add = ir.Constant(pair, ir.Undefined)
        add = builder.insert_element(add, args[2], ir.Constant(lane, 0))
        add = builder.insert_element(add, args[3], ir.Constant(lane, 1))
        total = builder.fadd(builder.load(pair_ptr, align=8), add)
        builder.store(total, pair_ptr, align=8)
        return context.get_dummy_value()

    return sig, codegen


@overload(add_pair, jit_options={"nogil": True})
def _add_pair_overload(hist, index, a, b):  # pragma: no cover
    if _vector_applies(hist, index):
        def vector(hist, index, a, b):
            _add_pair_vector(hist, index, float(a), float(b))
        return vector

    def scalar(hist, index, a, b):
        hist[index + (0,)] += a
        hist[index + (1,)] += b
    return scalar
