"""Loading libjitd.so and declaring the C API (include/jitd/jitd.h,
include/jitd/jitd_builder.h) for ctypes.

The library is found, in order, at $JITD_LIBRARY (a file path), next to this
package (jitd/libjitd.so, for installs that bundle it), in the repository's
build/lib (when the package runs from a checkout), and finally through the
system loader ("libjitd.so.1"). The first that loads wins; `library_path()`
says which.

Thread safety: the CDLL and its prototypes are set up once, under a lock.
"""

import ctypes
import os
import threading

from . import _status

_lock = threading.Lock()
_lib = None
_lib_path = None


class OpId(ctypes.Structure):
    """jitd_op_t: one value in one builder, passed by value."""
    _fields_ = [("id", ctypes.c_uint64)]


class ExecuteTiming(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("queue_micros", ctypes.c_uint64),
                ("execute_micros", ctypes.c_uint64), ("total_micros", ctypes.c_uint64)]


class ExecuteOptions(ctypes.Structure):
    """jitd_execute_options_t; resource_fill since C API version 8."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("deadline_micros", ctypes.c_uint64),
                ("has_resource_seed", ctypes.c_int), ("resource_seed", ctypes.c_uint64),
                ("resource_fill", ctypes.c_int32)]


# JITD_EXECUTE_OPTIONS_STRUCT_SIZE: the struct up to resource_seed (what a
# library older than version 8 takes).
EXECUTE_OPTIONS_V5_SIZE = ExecuteOptions.resource_fill.offset


class ClientOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("socket_path", ctypes.c_char_p),
                ("start_daemon_if_missing", ctypes.c_int), ("timeout_ms", ctypes.c_uint32),
                # C API version 7.
                ("trust_daemon_uid", ctypes.c_uint32),
                # C API version 12: remote daemons (tcp://HOST:PORT, TLS).
                ("tls_ca_file", ctypes.c_char_p), ("tls_cert_file", ctypes.c_char_p),
                ("tls_key_file", ctypes.c_char_p), ("token_file", ctypes.c_char_p),
                ("insecure_loopback", ctypes.c_int)]


class CompileOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("device", ctypes.c_char_p),
                ("profile", ctypes.c_int), ("dump_dir", ctypes.c_char_p),
                # C API version 9: replicated execution.
                ("num_replicas", ctypes.c_uint32), ("num_partitions", ctypes.c_uint32),
                ("device_assignment", ctypes.POINTER(ctypes.c_int64)),
                ("device_assignment_size", ctypes.c_size_t),
                # C API version 10: concrete argument shapes (dynamic shapes).
                ("num_argument_shapes", ctypes.c_size_t),
                ("argument_dtypes", ctypes.POINTER(ctypes.c_int)),
                ("argument_ranks", ctypes.POINTER(ctypes.c_size_t)),
                ("argument_dims", ctypes.POINTER(ctypes.c_int64))]


# struct_size of a jitd_compile_options_t before version 9 (libraries that
# check nothing past dump_dir).
COMPILE_OPTIONS_V6_SIZE = CompileOptions.num_replicas.offset


class DotDimensionNumbers(ctypes.Structure):
    _fields_ = [("lhs_contracting_dimensions", ctypes.POINTER(ctypes.c_int64)),
                ("num_lhs_contracting_dimensions", ctypes.c_size_t),
                ("rhs_contracting_dimensions", ctypes.POINTER(ctypes.c_int64)),
                ("num_rhs_contracting_dimensions", ctypes.c_size_t),
                ("lhs_batch_dimensions", ctypes.POINTER(ctypes.c_int64)),
                ("num_lhs_batch_dimensions", ctypes.c_size_t),
                ("rhs_batch_dimensions", ctypes.POINTER(ctypes.c_int64)),
                ("num_rhs_batch_dimensions", ctypes.c_size_t)]


class ConvOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("num_spatial_dimensions", ctypes.c_size_t),
                ("window_strides", ctypes.POINTER(ctypes.c_int64)),
                ("padding_low", ctypes.POINTER(ctypes.c_int64)),
                ("padding_high", ctypes.POINTER(ctypes.c_int64)),
                ("lhs_dilation", ctypes.POINTER(ctypes.c_int64)),
                ("rhs_dilation", ctypes.POINTER(ctypes.c_int64)),
                ("input_batch_dimension", ctypes.c_int64),
                ("input_feature_dimension", ctypes.c_int64),
                ("input_spatial_dimensions", ctypes.POINTER(ctypes.c_int64)),
                ("kernel_input_feature_dimension", ctypes.c_int64),
                ("kernel_output_feature_dimension", ctypes.c_int64),
                ("kernel_spatial_dimensions", ctypes.POINTER(ctypes.c_int64)),
                ("output_batch_dimension", ctypes.c_int64),
                ("output_feature_dimension", ctypes.c_int64),
                ("output_spatial_dimensions", ctypes.POINTER(ctypes.c_int64)),
                ("feature_group_count", ctypes.c_int64),
                ("batch_group_count", ctypes.c_int64)]


class GatherDimensionNumbers(ctypes.Structure):
    _fields_ = [("offset_dims", ctypes.POINTER(ctypes.c_int64)),
                ("num_offset_dims", ctypes.c_size_t),
                ("collapsed_slice_dims", ctypes.POINTER(ctypes.c_int64)),
                ("num_collapsed_slice_dims", ctypes.c_size_t),
                ("start_index_map", ctypes.POINTER(ctypes.c_int64)),
                ("num_start_index_map", ctypes.c_size_t),
                ("index_vector_dim", ctypes.c_int64)]


class ScatterDimensionNumbers(ctypes.Structure):
    _fields_ = [("update_window_dims", ctypes.POINTER(ctypes.c_int64)),
                ("num_update_window_dims", ctypes.c_size_t),
                ("inserted_window_dims", ctypes.POINTER(ctypes.c_int64)),
                ("num_inserted_window_dims", ctypes.c_size_t),
                ("scatter_dims_to_operand_dims", ctypes.POINTER(ctypes.c_int64)),
                ("num_scatter_dims_to_operand_dims", ctypes.c_size_t),
                ("index_vector_dim", ctypes.c_int64)]


P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
I64P = ctypes.POINTER(ctypes.c_int64)
SZ = ctypes.c_size_t
I = ctypes.c_int
I64 = ctypes.c_int64
U32 = ctypes.c_uint32
U64 = ctypes.c_uint64
S = ctypes.c_char_p
OPP = ctypes.POINTER(OpId)

# name -> (restype, argtypes). Every function returning a status returns P.
_CORE = {
    "jitd_api_version": (I, []),
    "jitd_status_code": (I, [P]),
    "jitd_status_message": (S, [P]),
    "jitd_status_free": (None, [P]),
    "jitd_string_free": (None, [P]),
    "jitd_client_connect": (P, [ctypes.POINTER(ClientOptions), PP]),
    "jitd_client_close": (None, [P]),
    "jitd_client_stats_json": (P, [P, I, PP]),
    "jitd_buffer_create": (P, [P, I, I64P, SZ, PP]),
    "jitd_buffer_data": (P, [P]),
    "jitd_buffer_size_bytes": (SZ, [P]),
    "jitd_buffer_destroy": (None, [P]),
    # Device-resident buffers (C API version 11).
    "jitd_buffer_create_on_device": (P, [P, S, I, I64P, SZ, P, PP]),
    "jitd_buffer_device": (S, [P]),
    "jitd_buffer_copy": (P, [P, P]),
    "jitd_client_compile": (P, [P, S, SZ, ctypes.POINTER(CompileOptions), PP]),
    "jitd_executable_cache_hit": (I, [P]),
    "jitd_executable_num_arguments": (SZ, [P]),
    "jitd_executable_num_results": (SZ, [P]),
    "jitd_executable_argument_shape": (P, [P, SZ, ctypes.POINTER(I), ctypes.POINTER(SZ),
                                           ctypes.POINTER(I64P)]),
    "jitd_executable_result_shape": (P, [P, SZ, ctypes.POINTER(I), ctypes.POINTER(SZ),
                                         ctypes.POINTER(I64P)]),
    "jitd_executable_execute": (P, [P, PP, SZ, PP, SZ, ctypes.POINTER(ExecuteTiming)]),
    "jitd_executable_release": (None, [P]),
    # Profiles (C API version 6).
    "jitd_executable_profile_size": (SZ, [P]),
    "jitd_executable_profile_row": (P, [P, SZ, ctypes.POINTER(S), ctypes.POINTER(U64),
                                        ctypes.POINTER(U64)]),
    "jitd_executable_profile_omitted": (U64, [P]),
}

# Infeed/outfeed and execute deadlines (C API version 3).
_FEEDS = {
    "jitd_executable_execute_with_deadline": (P, [P, PP, SZ, PP, SZ, U64,
                                                  ctypes.POINTER(ExecuteTiming)]),
    "jitd_client_transfer_to_infeed": (P, [P, S, I, I64P, SZ, P, SZ]),
    "jitd_client_transfer_buffer_to_infeed": (P, [P, S, P]),
    "jitd_client_transfer_from_outfeed": (P, [P, S, I, I64P, SZ, P, SZ, U32]),
    "jitd_client_transfer_from_outfeed_to_buffer": (P, [P, S, P, U32]),
}

# The builder (include/jitd/jitd_builder.h).
_BUILDER = {
    "jitd_shape_create_array": (P, [I, I64P, SZ, PP]),
    "jitd_shape_create_tuple": (P, [PP, SZ, PP]),
    "jitd_shape_create_token": (P, [PP]),
    "jitd_shape_destroy": (None, [P]),
    "jitd_shape_kind": (I, [P]),
    "jitd_shape_dtype": (I, [P]),
    "jitd_shape_rank": (SZ, [P]),
    "jitd_shape_dims": (I64P, [P]),
    "jitd_shape_tuple_size": (SZ, [P]),
    "jitd_shape_tuple_element": (P, [P, SZ]),
    "jitd_shape_to_string": (P, [P, PP]),
    "jitd_builder_create": (P, [S, PP]),
    "jitd_builder_destroy": (None, [P]),
    "jitd_builder_status": (P, [P]),
    "jitd_builder_get_shape": (P, [P, OpId, PP]),
    "jitd_builder_parameter": (P, [P, I64, P, S, OPP]),
    "jitd_builder_constant_scalar": (P, [P, I, P, OPP]),
    "jitd_builder_constant_array": (P, [P, I, I64P, SZ, P, SZ, OPP]),
    "jitd_builder_unary": (P, [P, I, OpId, OPP]),
    "jitd_builder_binary": (P, [P, I, OpId, OpId, I64P, SZ, OPP]),
    "jitd_builder_convert_element_type": (P, [P, OpId, I, OPP]),
    "jitd_builder_bitcast_convert_type": (P, [P, OpId, I, OPP]),
    "jitd_builder_broadcast": (P, [P, OpId, I64P, SZ, OPP]),
    "jitd_builder_broadcast_in_dim": (P, [P, OpId, I64P, SZ, I64P, SZ, OPP]),
    "jitd_builder_reshape": (P, [P, OpId, I64P, SZ, I64P, SZ, OPP]),
    "jitd_builder_transpose": (P, [P, OpId, I64P, SZ, OPP]),
    "jitd_builder_rev": (P, [P, OpId, I64P, SZ, OPP]),
    "jitd_builder_slice": (P, [P, OpId, I64P, I64P, I64P, SZ, OPP]),
    "jitd_builder_slice_in_dim": (P, [P, OpId, I64, I64, I64, I64, OPP]),
    "jitd_builder_dynamic_slice": (P, [P, OpId, OPP, SZ, I64P, SZ, OPP]),
    "jitd_builder_dynamic_update_slice": (P, [P, OpId, OpId, OPP, SZ, OPP]),
    "jitd_builder_concatenate": (P, [P, OPP, SZ, I64, OPP]),
    "jitd_builder_pad": (P, [P, OpId, OpId, I64P, I64P, I64P, SZ, OPP]),
    "jitd_builder_iota": (P, [P, I, I64, OPP]),
    "jitd_builder_broadcasted_iota": (P, [P, P, I64, OPP]),
    "jitd_builder_select": (P, [P, OpId, OpId, OpId, OPP]),
    "jitd_builder_clamp": (P, [P, OpId, OpId, OpId, OPP]),
    "jitd_builder_dot": (P, [P, OpId, OpId, OPP]),
    "jitd_builder_dot_general": (P, [P, OpId, OpId, ctypes.POINTER(DotDimensionNumbers), OPP]),
    "jitd_builder_conv_general_dilated": (P, [P, OpId, OpId, ctypes.POINTER(ConvOptions),
                                              OPP]),
    "jitd_padding_for_type": (P, [I, I64P, I64P, I64P, SZ, I64P, I64P]),
    "jitd_builder_conv": (P, [P, OpId, OpId, I64P, SZ, I, OPP]),
    "jitd_builder_build": (P, [P, OpId, PP]),
    "jitd_computation_destroy": (None, [P]),
    "jitd_computation_name": (S, [P]),
    "jitd_computation_module": (P, [P, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
                                    ctypes.POINTER(SZ)]),
    "jitd_computation_num_parameters": (SZ, [P]),
    "jitd_computation_parameter_shape": (P, [P, SZ]),
    "jitd_computation_result_shape": (P, [P]),
    "jitd_computation_to_text": (P, [P, PP]),
    "jitd_client_compile_computation": (P, [P, P, ctypes.POINTER(CompileOptions), PP]),
    "jitd_builder_reduce": (P, [P, OPP, OPP, SZ, P, I64P, SZ, OPP]),
    "jitd_builder_reduce_window": (P, [P, OPP, OPP, SZ, P, I64P, I64P, I64P, I64P, I64P,
                                       I64P, SZ, OPP]),
    "jitd_builder_map": (P, [P, OPP, SZ, P, I64P, SZ, OPP]),
    "jitd_builder_sort": (P, [P, OPP, SZ, I64, P, I, OPP]),
    "jitd_builder_while": (P, [P, P, P, OpId, OPP]),
    "jitd_builder_conditional": (P, [P, OpId, OpId, P, OpId, P, OPP]),
    "jitd_builder_conditional_indexed": (P, [P, OpId, PP, OPP, SZ, OPP]),
    "jitd_builder_tuple": (P, [P, OPP, SZ, OPP]),
    "jitd_builder_get_tuple_element": (P, [P, OpId, I64, OPP]),
    "jitd_builder_gather": (P, [P, OpId, OpId, ctypes.POINTER(GatherDimensionNumbers), I64P,
                                SZ, I, OPP]),
    "jitd_builder_scatter": (P, [P, OpId, OpId, OpId, P,
                                 ctypes.POINTER(ScatterDimensionNumbers), I, I, OPP]),
    "jitd_builder_create_token": (P, [P, OPP]),
    "jitd_builder_after_all": (P, [P, OPP, SZ, OPP]),
    "jitd_builder_infeed_with_token": (P, [P, OpId, P, S, OPP]),
    "jitd_builder_outfeed_with_token": (P, [P, OpId, OpId, S, OPP]),
    "jitd_builder_infeed": (P, [P, P, S, OPP]),
    "jitd_builder_outfeed": (P, [P, OpId, S, OPP]),
}

# More xla_client ops (C API version 4, include/jitd/jitd_builder.h).
I32 = ctypes.c_int32
_BUILDER_V4 = {
    "jitd_builder_call": (P, [P, P, OPP, SZ, OPP]),
    "jitd_builder_reduce_precision": (P, [P, OpId, I32, I32, OPP]),
    "jitd_builder_replica_id": (P, [P, OPP]),
    "jitd_builder_cholesky": (P, [P, OpId, I, OPP]),
    "jitd_builder_triangular_solve": (P, [P, OpId, OpId, I, I, I, I, OPP]),
    "jitd_builder_fft": (P, [P, OpId, I, I64P, SZ, OPP]),
    "jitd_builder_rng_uniform": (P, [P, OpId, OpId, P, OPP]),
    "jitd_builder_rng_normal": (P, [P, OpId, OpId, P, OPP]),
    "jitd_builder_select_and_scatter": (P, [P, OpId, P, I64P, I64P, I64P, I64P, SZ, OpId, OpId,
                                            P, OPP]),
}

# API version 5: execute with options (dense_resource fills).
_EXECUTE_EX = {
    "jitd_executable_execute_ex": (P, [P, PP, SZ, PP, SZ, ctypes.POINTER(ExecuteOptions),
                                       ctypes.POINTER(ExecuteTiming)]),
}

# API version 7: the daemon's devices (optional: older libraries lack them).
_DEVICES = {
    "jitd_client_num_devices": (SZ, [P]),
    "jitd_client_device_name": (S, [P, SZ]),
    "jitd_client_default_device": (S, [P]),
    # API version 12: remote daemons.
    "jitd_client_remote_identity": (S, [P]),
}

# API version 13: tuples and tokens across the wire (optional).
_STRUCTURES = {
    "jitd_executable_argument_structure": (S, [P]),
    "jitd_executable_result_structure": (S, [P]),
}

# API version 9: replicated execution (optional: older libraries lack it).
_REPLICAS = {
    "jitd_executable_num_replicas": (SZ, [P]),
    "jitd_executable_num_partitions": (SZ, [P]),
    "jitd_executable_execute_replicated": (P, [P, SZ, PP, SZ, PP, SZ,
                                               ctypes.POINTER(ExecuteOptions),
                                               ctypes.POINTER(ExecuteTiming)]),
    "jitd_client_transfer_to_infeed_replica": (P, [P, S, U32, I, I64P, SZ, P, SZ]),
    "jitd_client_transfer_from_outfeed_replica": (P, [P, S, U32, I, I64P, SZ, P, SZ, U32]),
}

# Functions the loaded library lacks (an older libjitd.so): calling them
# raises a JitdError naming the function.
_missing = set()


def _candidates():
    env = os.environ.get("JITD_LIBRARY")
    if env:
        yield env
        return  # an explicit choice is not second-guessed
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libjitd.so", "libjitd.so.1"):
        yield os.path.join(here, name)
    # A checkout: libclient/python/jitd -> the repository root's build/lib.
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    yield os.path.join(root, "build", "lib", "libjitd.so")
    yield "libjitd.so.1"
    yield "libjitd.so"


def _declare(lib, table):
    for name, (restype, argtypes) in table.items():
        fn = getattr(lib, name, None)
        if fn is None:
            _missing.add(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes


def lib():
    """The loaded libjitd.so (a ctypes.CDLL); loads it on first use."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        errors = []
        for candidate in _candidates():
            is_path = os.sep in candidate
            if is_path and not os.path.exists(candidate):
                errors.append(candidate + ": no such file")
                continue
            try:
                loaded = ctypes.CDLL(candidate)
            except OSError as e:
                errors.append("%s: %s" % (candidate, e))
                continue
            _declare(loaded, _CORE)
            _declare(loaded, _FEEDS)
            _declare(loaded, _BUILDER)
            _declare(loaded, _BUILDER_V4)
            _declare(loaded, _DEVICES)
            _declare(loaded, _EXECUTE_EX)
            _declare(loaded, _REPLICAS)
            _declare(loaded, _STRUCTURES)
            core_missing = sorted(n for n in _CORE if n in _missing)
            if core_missing:
                errors.append("%s: not a jitd C API library (lacks %s)"
                              % (candidate, ", ".join(core_missing)))
                _missing.clear()
                continue
            _lib, _lib_path = loaded, candidate
            return _lib
        raise _status.JitdError(
            _status.StatusCode.UNAVAILABLE,
            "cannot load libjitd.so; set $JITD_LIBRARY to its path or build it "
            "(bash scripts/build.sh jitd_c_api). Tried: " + "; ".join(errors))


def library_path():
    """Where libjitd.so was loaded from."""
    lib()
    return _lib_path


def has(name):
    """Whether the loaded library has C function `name`."""
    lib()
    return name not in _missing


def fn(name):
    """The C function `name`; a JitdError (UNIMPLEMENTED) if the library lacks it."""
    l = lib()
    if name in _missing:
        raise _status.JitdError(
            _status.StatusCode.UNIMPLEMENTED,
            "the loaded libjitd.so (%s) has no %s; it is older than this Python package"
            % (_lib_path, name))
    return getattr(l, name)


def check(status):
    """Raises a JitdError for a non-NULL jitd_status_t* (and frees it)."""
    if not status:
        return
    l = lib()
    code = l.jitd_status_code(status)
    message = l.jitd_status_message(status).decode("utf-8", "replace")
    l.jitd_status_free(status)
    raise _status.JitdError(code, message)


def take_string(ptr):
    """A Python str from a char* the library allocated (freed here)."""
    if not ptr:
        return ""
    text = ctypes.string_at(ptr).decode("utf-8", "replace")
    lib().jitd_string_free(ptr)
    return text


def int64_array(values):
    """A ctypes int64 array (or None for an empty sequence) and its length."""
    values = [int(v) for v in values]
    if not values:
        return None, 0
    return (ctypes.c_int64 * len(values))(*values), len(values)
