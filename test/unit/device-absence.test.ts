import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { deviceInfo } from '../../src/native/device.js';
import { deviceAbsenceReason, NVIDIA_DRIVER_VERSION_FILE } from '../../src/tenancy/device-absence.js';

const DRIVER_LOADED = path.join(import.meta.dirname, '..', 'fixtures', 'nvidia', 'version');
const NO_DRIVER = path.join(import.meta.dirname, '..', 'fixtures', 'nvidia', 'absent');
const INSUFFICIENT =
  'host memory (no CUDA device: cudaGetDeviceCount: cudaErrorInsufficientDriver (CUDA driver version is insufficient for CUDA runtime version))';

describe('deviceAbsenceReason', () => {
  it('says there is no CUDA device and no driver, not that the driver is too old, on a machine without one', () => {
    const reason = deviceAbsenceReason(0, INSUFFICIENT, NO_DRIVER);
    expect(reason).toBe('no CUDA device 0: no NVIDIA driver is loaded on this machine (cudaGetDeviceCount: cudaErrorInsufficientDriver)');
    expect(reason).not.toMatch(/driver version is insufficient/);
  });

  it('names the loaded driver, and keeps CUDA\'s words, when the driver is there but CUDA cannot use it', () => {
    expect(deviceAbsenceReason(1, INSUFFICIENT, DRIVER_LOADED)).toBe(
      'no CUDA device 1: NVIDIA driver 550.54.14 is loaded, but its CUDA library is missing (not mounted into this container) ' +
        'or older than this build\'s CUDA runtime (cudaGetDeviceCount: cudaErrorInsufficientDriver ' +
        '(CUDA driver version is insufficient for CUDA runtime version))',
    );
  });

  it('says the driver sees no GPU for cudaErrorNoDevice, and keeps other CUDA errors as they are', () => {
    expect(deviceAbsenceReason(0, 'host memory (no CUDA device: cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected))', DRIVER_LOADED))
      .toBe('no CUDA device 0: the NVIDIA driver sees no GPU (cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected))');
    expect(deviceAbsenceReason(0, 'host memory (no CUDA device: cudaGetDeviceCount: cudaErrorStubLibrary (CUDA driver is a stub library))', NO_DRIVER))
      .toBe('no CUDA device 0: cudaGetDeviceCount: cudaErrorStubLibrary (CUDA driver is a stub library)');
  });

  it('keeps the probe\'s words for the other reasons there is no usable device', () => {
    expect(deviceAbsenceReason(2, 'host memory (CUDA device 2 does not exist: 1 visible)', DRIVER_LOADED))
      .toBe('no usable CUDA device 2: host memory (CUDA device 2 does not exist: 1 visible)');
    expect(deviceAbsenceReason(0, 'host memory (built without CUDA)', NO_DRIVER)).toBe('no usable CUDA device 0: host memory (built without CUDA)');
  });

  it('reads this machine: with no NVIDIA driver loaded, the real probe\'s answer says there is no CUDA device', () => {
    const probed = deviceInfo(0);
    if (probed.backend === 'cuda' || existsSync(NVIDIA_DRIVER_VERSION_FILE)) return;
    const reason = deviceAbsenceReason(0, probed.name);
    expect(reason).toMatch(/^no (usable )?CUDA device 0: /);
    expect(reason).not.toMatch(/driver version is insufficient/);
  });
});
