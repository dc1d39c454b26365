// Plain shapes of library tool definitions (api_call, client_tool) as the runtime and the executor read them.

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
export type LlmParameterType = 'text' | 'number' | 'boolean' | 'enum';

export interface KeyValue {
  key: string;
  value: string;
}

/** A parameter the model supplies when it calls the tool. */
export interface LlmParameter {
  name: string;
  description: string;
  type: LlmParameterType;
  /** Allowed values; present (non-empty) when `type` is `enum`. */
  values?: string[];
  required: boolean;
}

export interface ResponseVariable {
  variableName: string;
  /** JSONPath into the response body, e.g. `$.order.status`. */
  jsonPath: string;
}

/** Outbound authentication: every credential is a secret *name* in the organization vault, never a value. */
export type ToolAuth =
  | { type: 'none' }
  | { type: 'bearer'; token: string }
  | { type: 'api_key'; name: string; location: 'header' | 'query'; value: string }
  | { type: 'basic'; username: string; password: string };

export interface ApiCallToolDefinition {
  type: 'api_call';
  name: string;
  description: string;
  enabled: boolean;
  url: string;
  method: HttpMethod;
  /** Milliseconds, 1000-30000. */
  timeout: number;
  headers?: Record<string, string>;
  headersArray?: KeyValue[];
  queryParams?: KeyValue[];
  /** Raw JSON text with `{{name}}` placeholders. */
  requestBody?: string;
  llmParameters?: LlmParameter[];
  responseVariables: ResponseVariable[];
  /** Absent from what the runtime, logs and records see (see stripAuth); given to the executor separately. */
  auth?: ToolAuth;
}

export interface ClientToolDefinition {
  type: 'client_tool';
  name: string;
  description: string;
  enabled: boolean;
  /** How long the agent waits for `function_call.result`, in milliseconds. */
  timeoutMs: number;
  expectsResponse: boolean;
  fillerPhrases: string[];
}

export type ToolDefinition = ApiCallToolDefinition | ClientToolDefinition;
