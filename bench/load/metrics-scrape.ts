// GET /metrics from a server the suite started: the text, or parsed into
// series -> value. Shared by the suites that read the server's counters.
import http from 'node:http';

/** The exposition text of http://127.0.0.1:PORT/metrics (5 s timeout). */
export function scrapeText(port: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: '/metrics', agent: false, timeout: 5000 }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve(text) : reject(new Error(`GET /metrics answered ${response.statusCode}`))));
    });
    request.on('timeout', () => request.destroy(new Error('GET /metrics timed out')));
    request.on('error', reject);
  });
}

/** Every sample as `series{labels}` -> value. */
export async function scrape(port: number): Promise<Map<string, number>> {
  const samples = new Map<string, number>();
  for (const line of (await scrapeText(port)).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const split = line.lastIndexOf(' ');
    samples.set(line.slice(0, split), Number(line.slice(split + 1)));
  }
  return samples;
}
