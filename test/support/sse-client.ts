// Reads a server-sent event stream (GET /events): each `data:` line's JSON, in order, until the stream ends.

export class SseReader {
  readonly events: any[] = [];
  /** Resolves when the server ended the stream. */
  readonly done: Promise<void>;
  status = 0;
  private readonly controller = new AbortController();

  constructor(url: string, key: string) {
    this.done = this.read(url, key);
    this.done.catch(() => {});
  }

  private async read(url: string, key: string): Promise<void> {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` }, signal: this.controller.signal });
    this.status = res.status;
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        if (data) this.events.push(JSON.parse(data));
      }
    }
  }

  /** The first event (after index `after`) of a type, once it arrives. */
  async waitFor(type: string, timeoutMs = 15_000, after = 0): Promise<any> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const e = this.events.slice(after).find((x) => x.event_type === type);
      if (e) return e;
      if (Date.now() > until) throw new Error(`no ${type} event; got ${this.events.map((x) => x.event_type).join(', ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  close(): void {
    this.controller.abort();
  }
}
