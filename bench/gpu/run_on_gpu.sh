#!/usr/bin/env bash
# jitd on a GPU machine, from the portable bundle: the gpu tests, the
# conformance corpus on cuda, the models, the daemon, torch beside it, and
# two driver probes. What BENCHMARKS.md's "The cuda device on a GPU"
# section was measured with (raw logs: bench/results/2026-11-29-h200/).
#
# Here (a build machine), once per change, into .gpu/ (ignored by git):
#   BUNDLE_BINARIES=gpu bash scripts/bundle.sh && mkdir -p .gpu && cp build-bundle/jitd-*-linux-x86_64.tar.xz .gpu/
#   tar -C ../shared -cJf .gpu/corpus.tar.xz conformance/stablehlo conformance/README.md models
#   for p in reset_probe reg_probe floors; do cc -O2 -o .gpu/$p bench/gpu/probes/$p.c -ldl; done
# There (the GPU machine, in a copy of this checkout with .gpu/ beside it;
# logs and result files go to $OUT):
#   OUT=/some/dir bash bench/gpu/run_on_gpu.sh [PARTS]
# PARTS (default: env tests confcheck models daemon peer cpu): env, tests
# (scripts/test-gpu.sh), conf (the corpus, device pipeline), confnofold
# (nothing folded), confmodes (exact f32 / no libraries), confcheck (as
# ctest's jitd_conformance_cuda), models, resnet, agree (models against
# cpu), daemon, daemonbig, multi (processes sharing the GPU), many (issue
# 19 item 5: N = 1, 4, 16, 32 ResNet-50 clients of one daemon against N
# torch and N JAX processes, bench/gpu/many_clients.py; MANY_SECONDS per
# run, default 4; MANY_RUNTIMES, default "jitd torch jax"), resnetprofile (where a ResNet-50 execute's time goes on
# cuda), split (split reductions, bench/gpu/split/*.mlir and the
# reduce*.mlir, against the cpu device), floors (issue 19 items 2 and 3: the driver's and cuBLAS's floors,
# torch's kernels and jitd's on the same work, a tiny execute through the
# daemon), tiny, peer (torch), profile, profile2, cpu, probe (a kernel
# fault), regprobe
# (cuMemHostRegister on memfd memory). PINCAP=BYTES sets the daemon's cap
# on pinned host memory for daemonbig.
set -u
repo=$(pwd)
carry="${GPU_CARRY:-$repo/.gpu}"
here="$repo/bench/gpu"
parts="${*:-env tests confcheck models daemon peer cpu}"
want() { [[ " $parts " == *" $1 "* ]]; }
log=$OUT/log.txt
exec > >(tee -a "$log") 2>&1
t0=$(date +%s.%N)
stamp() { awk -v s="$t0" -v e="$(date +%s.%N)" -v m="$1" 'BEGIN { printf "=== [%6.1fs] %s\n", e - s, m }'; }

work=/tmp/jw
mkdir -p $work && cd $work
tar -xf "$carry"/jitd-*-linux-x86_64.tar.xz
tar -xf "$carry"/corpus.tar.xz
b=$(echo $work/jitd-*-linux-x86_64)
corpus=$work/conformance/stablehlo
models=$work/models
stamp "unpacked $b"

if [ -z "${VIRTUAL_ENV:-}" ] && [ -d /opt/torch/.venv ]; then export VIRTUAL_ENV=/opt/torch/.venv; echo "VIRTUAL_ENV set to $VIRTUAL_ENV (python3's venv)"; fi
export XDG_CACHE_HOME=$work/cache

# start_daemon DIR [ENV=VALUE ...]: a daemon on DIR/jitd.sock (its log in
# DIR/serve.log); sets sock and dpid.
start_daemon() {
  local dir=$1; shift
  mkdir -p "$dir" && chmod 700 "$dir"
  sock=$dir/jitd.sock
  env "$@" $b/bin/jitd serve --socket $sock > "$dir"/serve.log 2>&1 &
  dpid=$!
  sleep 1
}

if want env; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  ls -d /usr/local/cuda* 2>&1 | head
  ls /usr/local/cuda/lib64 2>/dev/null | grep -E 'nvJitLink|cublasLt|cufft|cudnn' | head
  for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia; do ls "$d" "$d"/*/lib 2>/dev/null | grep -E 'cublasLt|cufft|cudnn\.so|nvJitLink|^/' | head -30; done
  echo "VIRTUAL_ENV=${VIRTUAL_ENV:-unset} python3=$(command -v python3) ptxas=$(command -v ptxas)"
  ls $b/share/jitd/
  stamp env
fi

if want tests; then
  timeout 150 bash $b/scripts/test-gpu.sh 2>&1
  echo "test-gpu exit $?"
  tar -czf $OUT/gpu-test-logs.tar.gz -C /tmp $(cd /tmp && ls -d jitd-test-gpu.* 2>/dev/null) 2>/dev/null
  stamp tests
fi

if want conf; then
  timeout 200 $b/bin/jitd conformance --device=cuda -j 16 --timeout 20 --report $OUT/conformance-cuda.json \
    $corpus > $OUT/conformance-cuda.txt 2>&1
  echo "conformance exit $?"
  tail -n 3 $OUT/conformance-cuda.txt
  grep -c . $OUT/conformance-cuda.txt
  stamp conformance
fi

run_model() {  # device model repeat
  echo "--- $1 $2"
  timeout 60 $b/bin/jitd run --in-process --device=$1 --random-inputs --repeat $3 --warmup 2 $models/$2 2>&1 | tail -n 6
  echo "exit ${PIPESTATUS[0]}"
}
if want models; then
  for m in searchless_chess_9m.mlir pt_bert.mlir jax_resnet_50.mlir; do run_model cuda $m 20; done
  stamp models-cuda
fi

if want daemon; then
  start_daemon $work/d
  export JITD_SOCKET=$sock
  $b/bin/jitd run --device=cuda $b/examples/softmax.mlir 2>&1 | tail -n 8
  $b/bin/jitd run --device=cuda --repeat 2000 --warmup 20 $b/examples/softmax.mlir 2>&1 | tail -n 2
  $b/bin/jitd run --device=cpu --repeat 2000 --warmup 20 $b/examples/softmax.mlir 2>&1 | tail -n 2
  echo "--- 4 processes at once on cuda"
  for i in 1 2 3 4; do ($b/bin/jitd run --device=cuda --repeat 2000 --warmup 20 $b/examples/softmax.mlir 2>&1 | tail -n 1 | sed "s/^/[$i] /") & done
  wait $(jobs -p | grep -v "^$dpid$") 2>/dev/null
  sleep 0.2
  echo "--- mlp.py on cuda"
  PYTHONPATH=$b/python timeout 30 python3 $b/examples/mlp.py --platform cuda 2>&1 | tail -n 5
  $b/bin/jitd stats 2>&1 | head -n 40
  kill $dpid; wait $dpid
  tail -n 20 $work/d/serve.log
  stamp daemon
fi

if want cpu; then
  for m in searchless_chess_9m.mlir pt_bert.mlir; do run_model cpu $m 10; done
  stamp models-cpu
fi

if want peer; then
  for p in chain16m.mlir dot4096.mlir; do
    echo "--- jitd cuda $p"
    timeout 60 $b/bin/jitd run --in-process --device=cuda --random-inputs --repeat 10 --warmup 2 "$here"/$p 2>&1 | tail -n 3
  done
  timeout 90 python3 "$repo"/bench/peers/torch_gpu_peer.py 2>&1 | tail -n 12
  stamp peer
fi

if want probe; then
  for m in primary create both; do echo "--- reset probe $m"; timeout 20 "$carry"/reset_probe $m; done
  stamp probe
fi

if want profile; then
  for m in pt_bert.mlir searchless_chess_9m.mlir; do
    echo "--- profile cuda $m"
    timeout 60 $b/bin/jitd run --in-process --device=cuda --random-inputs --profile --repeat 3 --warmup 1 $models/$m 2>&1 | grep -v "^  first\|^  min\|^result" | head -n 45
  done
  stamp profile
fi

if want confnofold; then
  timeout 240 $b/bin/jitd conformance --device=cuda -j 16 --timeout 20 --pipeline inline,decompose-chlo,cse,dce \
    --report $OUT/conformance-cuda-nofold.json $corpus > $OUT/conformance-cuda-nofold.txt 2>&1
  echo "conformance (no folding) exit $?"
  tail -n 3 $OUT/conformance-cuda-nofold.txt
  stamp conformance-nofold
fi

if want confmodes; then
  for mode in exact nolib exactnolib; do
    case $mode in
      exact) env="JITD_CUDA_EXACT_F32=1" ;;
      nolib) env="JITD_CUDA_NO_LIBRARIES=1" ;;
      exactnolib) env="JITD_CUDA_EXACT_F32=1 JITD_CUDA_NO_LIBRARIES=1" ;;
    esac
    env $env timeout 200 $b/bin/jitd conformance --device=cuda -j 16 --timeout 20 --pipeline inline,decompose-chlo,cse,dce \
      $corpus > $OUT/conformance-cuda-$mode.txt 2>&1
    echo "conformance $mode exit $?"
    tail -n 2 $OUT/conformance-cuda-$mode.txt
  done
  stamp conformance-modes
fi

if want confcheck; then
  # As ctest's jitd_conformance_cuda: nothing folded, the expected failures.
  timeout 200 $b/bin/jitd conformance --device=cuda -j 16 --timeout 20 --pipeline inline,decompose-chlo,cse,dce \
    --expected-failures="$repo"/tests/conformance/cuda_expected_failures.txt --report $OUT/conformance-check.json \
    $corpus > $OUT/conformance-check.txt 2>&1
  echo "conformance check exit $?"
  grep -v "^/tmp" $OUT/conformance-check.txt | tail -n 6
  grep "^/tmp" $OUT/conformance-check.txt | cut -c1-250
  stamp conformance-check
fi

if want profile2; then
  for p in chain16m.mlir dot4096.mlir; do
    echo "--- profile cuda $p"
    timeout 60 $b/bin/jitd run --in-process --device=cuda --random-inputs --profile --repeat 5 --warmup 2 "$here"/$p 2>&1 | grep -v "^  first\|^  min\|^result" | head -n 12
  done
  stamp profile2
fi

if want resnet; then
  for d in cuda cpu; do
    echo "--- $d jax_resnet_50.mlir (seed 0, weights fill)"
    timeout 120 $b/bin/jitd run --in-process --device=$d --random-inputs --repeat 5 --warmup 1 $models/jax_resnet_50.mlir 2>&1 | tail -n 7
  done
  stamp resnet
fi

if want daemonbig; then
  start_daemon $work/d2 ${PINCAP:+JITD_CUDA_MAX_PINNED_BYTES=$PINCAP}
  for p in chain16m.mlir dot4096.mlir; do
    echo "--- daemon cuda $p"
    timeout 60 $b/bin/jitd run --socket $sock --device=cuda --random-inputs --repeat 10 --warmup 2 "$here"/$p 2>&1 | tail -n 2
  done
  for m in pt_bert.mlir jax_resnet_50.mlir; do
    echo "--- daemon cuda $m"
    timeout 90 $b/bin/jitd run --socket $sock --device=cuda --random-inputs --repeat 10 --warmup 2 $models/$m 2>&1 | tail -n 2
  done
  $b/bin/jitd stats --socket $sock 2>&1 | grep -E "device:|pinned|execute time"
  kill $dpid; wait $dpid
  grep "cuda" $work/d2/serve.log
  stamp daemonbig
fi

if want agree; then
  for m in searchless_chess_9m.mlir pt_bert.mlir jax_resnet_50.mlir; do
    for d in cuda cpu; do
      rm -rf $work/out-$d; mkdir -p $work/out-$d
      timeout 90 $b/bin/jitd run --in-process --device=$d --random-inputs -o $work/out-$d $models/$m > /dev/null 2>$work/err-$d || { echo "$d $m failed:"; tail -n 3 $work/err-$d; }
    done
    echo "--- $m (seed 0), cuda against cpu"
    timeout 60 python3 "$here"/compare_results.py $work/out-cuda $work/out-cpu
    echo "--- $m, exact f32 on cuda"
    rm -rf $work/out-cuda; mkdir -p $work/out-cuda
    JITD_CUDA_EXACT_F32=1 timeout 90 $b/bin/jitd run --in-process --device=cuda --random-inputs -o $work/out-cuda $models/$m > /dev/null 2>&1
    timeout 60 python3 "$here"/compare_results.py $work/out-cuda $work/out-cpu
  done
  stamp agree
fi

if want tiny; then
  echo "--- softmax in process on cuda: profile, then 2000 executes"
  timeout 30 $b/bin/jitd run --in-process --device=cuda --profile $b/examples/softmax.mlir 2>&1 | grep -v "^result\|^\[\|^ \[" | head -n 12
  timeout 30 $b/bin/jitd run --in-process --device=cuda --repeat 2000 --warmup 20 $b/examples/softmax.mlir 2>&1 | tail -n 1
  stamp tiny
fi

if want regprobe; then
  timeout 60 "$carry"/reg_probe
  stamp regprobe
fi

if want multi; then
  start_daemon $work/d3
  $b/bin/jitd run --socket $sock --device=cuda --random-inputs $models/jax_resnet_50.mlir > /dev/null 2>&1  # compiled once
  for n in 1 4; do
    echo "--- $n processes, resnet-50 through one daemon, 30 executes each"
    start=$(date +%s.%N)
    for i in $(seq $n); do ($b/bin/jitd run --socket $sock --device=cuda --random-inputs --repeat 30 --warmup 2 $models/jax_resnet_50.mlir 2>&1 | tail -n 1 | sed "s/^/[$i] /") & done
    wait $(jobs -p | grep -v "^$dpid$") 2>/dev/null
    awk -v s="$start" -v e="$(date +%s.%N)" -v n=$n 'BEGIN { printf "wall %.2f s for %d x 32 executes\n", e - s, n }'
  done
  nvidia-smi --query-gpu=memory.used --format=csv,noheader
  kill $dpid; wait $dpid
  stamp multi
fi

if want resnetprofile; then
  echo "--- profile cuda jax_resnet_50.mlir"
  timeout 60 $b/bin/jitd run --in-process --device=cuda --random-inputs --profile --repeat 3 --warmup 1 $models/jax_resnet_50.mlir > $OUT/resnet-profile.txt 2>&1
  echo "exit $?"
  grep -v "^  first\|^  min\|^result" $OUT/resnet-profile.txt | head -n 60
  stamp resnetprofile
fi

if want many; then
  secs=${MANY_SECONDS:-4}
  runtimes=" ${MANY_RUNTIMES:-jitd torch jax} "
  jaxpy=
  for p in python3 /opt/*/.venv/bin/python3 /opt/*/bin/python3 /usr/bin/python3; do
    if [ -x "$(command -v $p)" ] && $p -c "import jax" 2>/dev/null; then jaxpy=$p; break; fi
  done
  echo "python with jax: ${jaxpy:-none}"
  [ -n "$jaxpy" ] && $jaxpy -c "import jax; print('jax', jax.__version__, jax.devices())" 2>&1 | tail -n 1
  nvidia-smi --query-gpu=memory.used --format=csv,noheader
  if [[ "$runtimes" == *" jitd "* ]]; then
    start_daemon $work/d4
    timeout 60 $b/bin/jitd run --socket $sock --device=cuda --random-inputs --repeat 2 $models/jax_resnet_50.mlir 2>&1 | tail -n 1
    for n in 1 4 16 32; do
      echo "--- jitd, $n clients"
      PYTHONPATH=$b/python timeout 90 python3 "$here"/many_clients.py --runtime jitd --clients $n --seconds $secs \
        --socket $sock --daemon-pid $dpid --model $models/jax_resnet_50.mlir --json $OUT/many.jsonl 2>&1 | tail -n 3
    done
    echo "--- jitd, 16 clients, one SIGKILLed mid-run"
    PYTHONPATH=$b/python timeout 90 python3 "$here"/many_clients.py --runtime jitd --clients 16 --seconds $secs --kill-one \
      --socket $sock --daemon-pid $dpid --model $models/jax_resnet_50.mlir --json $OUT/many.jsonl 2>&1 | tail -n 3
    $b/bin/jitd stats --socket $sock 2>&1 | grep -E "sessions|executes|device:|execute time"
    kill $dpid; wait $dpid
    grep -v "session [0-9]* \(opened\|closed\)" $work/d4/serve.log | tail -n 20
    stamp many-jitd
  fi
  if [[ "$runtimes" == *" torch "* ]]; then
    for n in 1 4 16 32; do
      echo "--- torch, $n processes"
      timeout 120 python3 "$here"/many_clients.py --runtime torch --clients $n --seconds $secs --json $OUT/many.jsonl 2>&1 | tail -n 3
    done
    stamp many-torch
  fi
  if [ -n "$jaxpy" ] && [[ "$runtimes" == *" jax "* ]]; then
    for n in 1 4 16 32; do
      echo "--- jax, $n processes"
      timeout 150 $jaxpy "$here"/many_clients.py --runtime jax --clients $n --seconds $secs --json $OUT/many.jsonl 2>&1 | tail -n 3
    done
    stamp many-jax
  fi
fi

if want floors; then
  timeout 60 "$carry"/floors 2>&1
  timeout 120 python3 "$here"/torch_floors.py 2>&1 | tail -n 12
  for p in chain16m.mlir reduce4096.mlir reduce16m.mlir dot4096.mlir; do
    echo "--- profile cuda $p"
    timeout 60 $b/bin/jitd run --in-process --device=cuda --random-inputs --profile --repeat 5 --warmup 2 "$here"/$p 2>&1 \
      | grep -v "^  first\|^  min\|^result" | head -n 8
  done
  start_daemon $work/d5
  echo "--- examples/softmax.mlir through the daemon, cuda then cpu"
  for d in cuda cpu; do
    $b/bin/jitd run --socket $sock --device=$d --repeat 5000 --warmup 50 $b/examples/softmax.mlir 2>&1 | tail -n 1
  done
  kill $dpid; wait $dpid
  stamp floors
fi

if want split; then
  for p in "$here"/split/*.mlir "$here"/reduce16m.mlir "$here"/reduce4096.mlir; do
    for d in cuda cpu; do
      rm -rf $work/out-$d; mkdir -p $work/out-$d
      timeout 60 $b/bin/jitd run --in-process --device=$d --random-inputs -o $work/out-$d "$p" > /dev/null 2>$work/err-$d \
        || { echo "$d $p failed:"; tail -n 3 $work/err-$d; }
    done
    echo "--- $(basename "$p"), cuda against cpu"
    timeout 60 python3 "$here"/compare_results.py $work/out-cuda $work/out-cpu
  done
  for p in reduce16m.mlir split/sum_i32_1m.mlir; do
    echo "--- profile cuda $p"
    timeout 60 $b/bin/jitd run --in-process --device=cuda --random-inputs --profile --repeat 5 --warmup 2 "$here"/$p 2>&1 \
      | grep -v "^  first\|^  min\|^result\|^jitd: cuda" | head -n 6
  done
  stamp split
fi
