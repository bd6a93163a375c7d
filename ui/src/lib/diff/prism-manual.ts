// Prism highlights every `code.language-*` element of the page on load unless
// told not to, and that path writes innerHTML. We only ever call
// Prism.tokenize, so switch the automatic mode off before Prism loads (this
// module is imported first).
(globalThis as { Prism?: unknown }).Prism = { manual: true, disableWorkerMessageHandler: true };
export {};
