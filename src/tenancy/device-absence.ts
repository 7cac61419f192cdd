/**
 * Why there is no usable CUDA device, in words a reader can act on. The
 * native probe reports the CUDA runtime's own error, and on a machine without
 * a GPU that is cudaErrorInsufficientDriver, "CUDA driver version is
 * insufficient for CUDA runtime version": the runtime says so whenever it
 * finds no driver library at all, not only an old one. Read as written it
 * sends people to upgrade a driver on a machine that has no GPU. The native
 * message stays as the detail; the headline says there is no CUDA device, and
 * what the driver situation is.
 */
import { readFileSync } from 'node:fs';

/** The NVIDIA kernel module's version file: present exactly when the module is loaded. */
export const NVIDIA_DRIVER_VERSION_FILE = '/proc/driver/nvidia/version';

// The probe's wording for "cudaGetDeviceCount failed" (native/device/device_info.cc).
const NO_DEVICE = /^host memory \(no CUDA device: (.*)\)$/s;
const INSUFFICIENT_DRIVER = /cudaErrorInsufficientDriver(?: \([^)]*\))?/;

/**
 * The reason for the server's log, the device ledger and every KIND_GPU
 * version's executor note, from the probed device's name ("host memory
 * (<why>)"). Other causes (a device that does not exist, one that cannot be
 * queried, a build without CUDA) keep the probe's words.
 */
export function deviceAbsenceReason(ordinal: number, probedName: string, driverVersionFile = NVIDIA_DRIVER_VERSION_FILE): string {
  const cuda = NO_DEVICE.exec(probedName)?.[1];
  if (cuda === undefined) return `no usable CUDA device ${ordinal}: ${probedName}`;
  if (INSUFFICIENT_DRIVER.test(cuda)) {
    const kernelDriver = nvidiaDriverVersion(driverVersionFile);
    if (kernelDriver === undefined) {
      // Without the kernel module there is no GPU to use, whatever the runtime says about versions.
      return `no CUDA device ${ordinal}: no NVIDIA driver is loaded on this machine (${cuda.replace(INSUFFICIENT_DRIVER, 'cudaErrorInsufficientDriver')})`;
    }
    return (
      `no CUDA device ${ordinal}: NVIDIA driver ${kernelDriver} is loaded, but its CUDA library is missing ` +
      `(not mounted into this container) or older than this build's CUDA runtime (${cuda})`
    );
  }
  if (cuda.includes('cudaErrorNoDevice')) return `no CUDA device ${ordinal}: the NVIDIA driver sees no GPU (${cuda})`;
  return `no CUDA device ${ordinal}: ${cuda}`;
}

/** The loaded NVIDIA kernel module's version ("550.54.14"), or undefined when none is loaded. */
function nvidiaDriverVersion(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024"
  return /Kernel Module\s+(\S+)/.exec(text)?.[1] ?? 'of unknown version';
}
