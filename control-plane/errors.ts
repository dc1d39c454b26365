// Error type with an HTTP status, thrown by services and handlers; rendered as the platform's `{status:false, ...}` envelope.

export interface ApiErrorOptions {
  errorType?: string;
  data?: unknown;
  headers?: Record<string, string>;
  /** Raw body instead of the platform envelope (the inference API uses its own shapes). */
  rawBody?: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly errors: string[];
  readonly options: ApiErrorOptions;

  constructor(status: number, errors: string | string[], options: ApiErrorOptions = {}) {
    const list = Array.isArray(errors) ? errors : [errors];
    super(list.join('; '));
    this.status = status;
    this.errors = list;
    this.options = options;
  }

  body(): unknown {
    if (this.options.rawBody !== undefined) return this.options.rawBody;
    const body: Record<string, unknown> = { status: false };
    if (this.options.errorType) body.error_type = this.options.errorType;
    body.errors = this.errors;
    if (this.options.data !== undefined) body.data = this.options.data;
    return body;
  }
}

export const badRequest = (errors: string | string[]) => new ApiError(400, errors);
export const unauthorized = (message = 'Unauthorized: invalid or missing API key') => new ApiError(401, message);
/** 403 bodies carry `data` (the spec's Forbidden shape) and `errors` for clients that read either. */
export const forbidden = (message: string) => new ApiError(403, message, { data: { message } });
export const notFound = (message = 'Resource not found') => new ApiError(404, message);

/**
 * A row addressed by id: 404 when there is none, and the spec's general 403 when another organization owns it (the
 * same for every kind of resource, so the answer tells nothing about the other organization but that the id exists).
 */
export function ownRow<T extends { org_id: string | null }>(row: T | undefined, orgId: string, missing: () => ApiError, what: string): T {
  if (!row) throw missing();
  if (row.org_id !== orgId) throw forbidden(`This API key has no access to this ${what}`);
  return row;
}
export const conflict = (errorType: string, message: string, headers?: Record<string, string>) =>
  new ApiError(409, message, { errorType, headers });
export const locked = (message: string) => new ApiError(423, message, { errorType: 'config_freeze_active' });
