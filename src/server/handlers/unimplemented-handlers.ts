/**
 * Protocol RPCs hotpath does not implement: shared memory, trace and log
 * settings. Each answers UNIMPLEMENTED with a message saying what to use.
 */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { unimplemented } from '../../common/serving-error.js';
import { unary } from '../unary.js';

const UNIMPLEMENTED: Readonly<Record<string, string>> = {
  SystemSharedMemoryStatus: 'system shared memory is not supported; send tensors in the request',
  SystemSharedMemoryRegister: 'system shared memory is not supported; send tensors in the request',
  SystemSharedMemoryUnregister: 'system shared memory is not supported; send tensors in the request',
  CudaSharedMemoryStatus: 'CUDA shared memory is not supported; send tensors in the request',
  CudaSharedMemoryRegister: 'CUDA shared memory is not supported; send tensors in the request',
  CudaSharedMemoryUnregister: 'CUDA shared memory is not supported; send tensors in the request',
  TraceSetting: 'trace settings are not supported; hotpath logs carry W3C trace ids instead',
  LogSettings: 'log settings cannot be changed at run time; use the --log-level flag',
};

export function unimplementedHandlers(): UntypedServiceImplementation {
  return Object.fromEntries(
    Object.entries(UNIMPLEMENTED).map(([rpc, why]) => [
      rpc,
      unary(() => {
        throw unimplemented(`${rpc} is not implemented by hotpath: ${why}`);
      }),
    ]),
  );
}
