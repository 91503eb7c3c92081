# Builds the fuzz seed corpus for the ctest fuzz run (cmake -P script).
#   cmake -DSHARED_DIR=.../shared -DSEEDS_DIR=tests/fuzz/seeds
#         -DOUT_DIR=<build>/tests/fuzz -P make_seed_corpus.cmake
# OUT_DIR/seeds gets a fixed selection of small conformance files (one or two
# per op family) plus the hand-written seeds; OUT_DIR/work is emptied so every
# ctest run starts from the same corpus.

set(corpus_files
  iota_.mlir
  broadcast_in_dim_bool_2.mlir
  broadcast_in_dim_bfloat16_2.mlir
  broadcast_in_dim_uint64_2.mlir
  population_count_int8_4.mlir
  slice_bool_3.mlir
  slice_complex64_3.mlir
  reduce_precision_float64.mlir
  reshape_bool_2_3.mlir
  bitcast_convert_type_bool_2_3.mlir
  transpose_bool_2_3.mlir
  rev_bool_4_5.mlir
  div_int8_2_int8_2.mlir
  ne_int8_int8.mlir
  rem_float32_1_float32_1.mlir
  concatenate_bool_2_3_bool_2_3.mlir
  pad_int8_2_3_int8.mlir
  sort_bool_5_7.mlir
  fft_complex64_14_15_0_17.mlir
  select_n_bool_2_3_bool_2_3_bool_2_3.mlir
  imag_complex64_2_3.mlir
  round_float32_2_5.mlir
  dynamic_slice_float32_3_uint8_1.mlir
  dynamic_update_slice_float32_3_float32_1_uint8_1.mlir
  gather_float32_1_2_int64_1_2.mlir
  scatter_int8_1_int8.mlir
  clamp_int8_int8_2_3_int8.mlir
  rng_bit_generator_uint64_2.mlir
  dot_general_int8_4_3_uint8_3_6.mlir
  top_k_int32_6_chlo.mlir
  complex_float32_3_2_float32_3_1.mlir
  triangular_solve_float16_4_4_float16_4_1.mlir
  conv_general_dilated_float32_1_1_16_1_float32_4_1_1_2.mlir
  reduce_window_max_float32_2.mlir
  select_and_scatter_add_bool_1_3_5_bool_2_4_6.mlir
  cumsum_uint8_8_9.mlir
  argmax_bool_15.mlir
  erf_inv_float16_20_20_chlo.mlir
  random_split_.mlir
)

foreach(var SHARED_DIR SEEDS_DIR OUT_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "make_seed_corpus.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE "${OUT_DIR}/seeds" "${OUT_DIR}/work" "${OUT_DIR}/artifacts")
file(MAKE_DIRECTORY "${OUT_DIR}/seeds" "${OUT_DIR}/work" "${OUT_DIR}/artifacts")

foreach(name IN LISTS corpus_files)
  set(src "${SHARED_DIR}/conformance/stablehlo/${name}")
  if(NOT EXISTS "${src}")
    message(FATAL_ERROR "fuzz seed ${src} is missing (is ../shared beside the repo?)")
  endif()
  file(COPY "${src}" DESTINATION "${OUT_DIR}/seeds" NO_SOURCE_PERMISSIONS)
endforeach()

file(GLOB hand_written "${SEEDS_DIR}/*.mlir")
if(NOT hand_written)
  message(FATAL_ERROR "no hand-written seeds in ${SEEDS_DIR}")
endif()
file(COPY ${hand_written} DESTINATION "${OUT_DIR}/seeds" NO_SOURCE_PERMISSIONS)

list(LENGTH corpus_files n_corpus)
list(LENGTH hand_written n_hand)
message(STATUS "fuzz seeds: ${n_corpus} corpus files + ${n_hand} hand-written in ${OUT_DIR}/seeds")
