// The HTTP answer to a WebSocket upgrade the server refuses (rejects if the upgrade is accepted instead).
import WebSocket from 'ws';

export interface UpgradeRefusal {
  status: number;
  body: any;
}

export function upgradeRefusal(url: string, headers: Record<string, string> = {}): Promise<UpgradeRefusal> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    ws.on('open', () => {
      ws.close();
      reject(new Error('the upgrade was accepted'));
    });
    ws.on('error', () => {});
  });
}
