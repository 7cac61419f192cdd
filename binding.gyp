# CPU-only fallback build of the hotpath addon for machines without CMake
# (`node-gyp rebuild` -> build/Release/hotpath_native.node). CMakeLists.txt is
# authoritative: it builds the same sources plus the CUDA backend. Keep the
# source lists in sync; test/native checks both builds behave the same.
{
  'variables': {
    'hotpath_version': '<!(node -p "require(\'./package.json\').version")',
  },
  'targets': [
    {
      'target_name': 'hotpath_native',
      'sources': [
        'native/common/build_info.cc',
        'native/common/status.cc',
        'native/device/device_info.cc',
        'native/device/host_memory.cc',
        'native/device/nvml.cc',
        'native/arena/arena.cc',
        'native/arena/arena_stats.cc',
        'native/arena/backend_host.cc',
        'native/arena/registry.cc',
        'native/arena/detail/arena_state.cc',
        'native/arena/detail/cuda_backend_stub.cc',
        'native/arena/detail/pool.cc',
        'native/batcher/arena_batch_memory.cc',
        'native/batcher/batch_memory.cc',
        'native/batcher/batcher.cc',
        'native/batcher/clock.cc',
        'native/batcher/policy.cc',
        'native/batcher/types.cc',
        'native/batcher/execution_target.cc',
        # native/executor without its CUDA sources (.cu, cublas_loader.cc,
        # detail/cuda_status.cc): MakeCudaDevice comes from the stub.
        'native/executor/batch_target.cc',
        'native/executor/compiler.cc',
        'native/executor/compiler_ops.cc',
        'native/executor/compiler_passes.cc',
        'native/executor/compiler_shape_ops.cc',
        'native/executor/cuda_device_stub.cc',
        'native/executor/detail/kernel_checks.cc',
        'native/executor/executor.cc',
        'native/executor/graph_builder.cc',
        'native/executor/host_device.cc',
        'native/executor/host_kernels.cc',
        'native/executor/memory_plan.cc',
        'native/executor/plan.cc',
        'native/executor/plan_io.cc',
        'native/executor/step_runner.cc',
        'native/napi/addon.cc',
        'native/napi/addon_data.cc',
        'native/napi/arena_binding.cc',
        'native/napi/arena_binding_values.cc',
        'native/napi/batcher_binding.cc',
        'native/napi/batcher_binding_values.cc',
        'native/napi/batcher_dispatch.cc',
        'native/napi/build_info_binding.cc',
        'native/napi/device_binding.cc',
        'native/napi/executor_binding.cc',
        'native/napi/executor_binding_values.cc',
        'native/napi/result_js.cc',
        'native/napi/worker_binding.cc',
        'native/batcher/worker_pool_target.cc',
      ],
      'include_dirs': ['native'],
      # C++ exceptions on, as in the CMake build (NODE_ADDON_API_CPP_EXCEPTIONS
      # and _ALL, so a std::exception in a binding becomes a JS error).
      'dependencies': [
        "<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except_all",
      ],
      'defines': [
        'NAPI_VERSION=8',
        'NODE_ADDON_API_DISABLE_DEPRECATED',
        # See CMakeLists.txt: no std::terminate when a terminating worker calls in.
        'NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS',
        'HOTPATH_VERSION="<(hotpath_version)"',
        'HOTPATH_BUILD_SYSTEM="gyp"',
      ],
      'cflags_cc!': ['-std=gnu++17', '-std=gnu++20'],
      'cflags_cc': ['-std=c++20', '-Wall', '-Wextra', '-fvisibility=hidden'],
      'xcode_settings': {
        'CLANG_CXX_LANGUAGE_STANDARD': 'c++20',
        'GCC_SYMBOLS_PRIVATE_EXTERN': 'YES',
      },
    },
  ],
}
