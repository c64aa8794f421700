// The chat playground: streams /v1/chat/completions into the page. Text from
// the model or the user only ever goes through textContent, never as HTML.
"use strict";
window.stride = window.stride || {};

(function (ns) {
  const $ = (id) => document.getElementById(id);

  function authHeaders() {
    const key = $("api-key").value.trim();
    return key ? { Authorization: "Bearer " + key } : {};
  }

  // Reads "data: ..." Server-Sent Events from a fetch body; calls onData(obj) per JSON event.
  async function readEvents(response, onData) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        for (const line of block.split("\n")) {
          if (!line.startsWith("data: ")) continue;  // comments (keep-alive probes), event names
          const data = line.slice(6);
          if (data === "[DONE]") return;
          onData(JSON.parse(data));
        }
      }
    }
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      if (body.error) return `${response.status}: ${body.error.message}` + (body.error.param ? ` (${body.error.param})` : "");
    } catch (e) { /* not JSON */ }
    return `HTTP ${response.status}`;
  }

  class ChatPlayground {
    constructor() {
      this.history = [];  // [{role, content}] sent with each request
      this.controller = null;
      $("composer").addEventListener("submit", (e) => {
        e.preventDefault();
        this.send();
      });
      $("prompt").addEventListener("keydown", (e) => {
        if (e.key === "Enter" && !e.shiftKey) {
          e.preventDefault();
          this.send();
        }
      });
      $("stop").addEventListener("click", () => this.stop());
      $("clear").addEventListener("click", () => this.clear());
      $("json-mode").addEventListener("change", () => { $("json-schema").hidden = !$("json-mode").checked; });
    }

    // Fills the model list; false (the reason in this.modelsError) when it cannot be read.
    async loadModels() {
      try {
        const r = await fetch("/v1/models", { headers: authHeaders() });
        if (!r.ok) throw new Error(await errorText(r));
        const body = await r.json();
        const select = $("model");
        select.replaceChildren();
        for (const m of body.data) {
          const option = document.createElement("option");
          option.value = option.textContent = m.id;
          select.appendChild(option);
        }
        this.modelsError = null;
        this.status("ready");
        return true;
      } catch (e) {
        this.modelsError = e.message;
        this.status("models: " + e.message, true);
        return false;
      }
    }

    status(text, isError = false) {
      const s = $("chat-status");
      s.textContent = text;
      s.style.color = isError ? "var(--error)" : "";
    }

    bubble(role, text) {
      const div = document.createElement("div");
      div.className = "message " + role;
      const body = document.createElement("span");
      body.className = "text";
      body.textContent = text;
      div.appendChild(body);
      $("messages").appendChild(div);
      div.scrollIntoView({ block: "end" });
      return div;
    }

    // The request body from the settings panel; throws on a bad JSON schema.
    requestBody() {
      const messages = [];
      const system = $("system").value.trim();
      if (system) messages.push({ role: "system", content: system });
      messages.push(...this.history);
      const body = { model: $("model").value, messages, stream: true,
                     stream_options: { include_usage: true } };
      const num = (id, parse) => { const v = $(id).value.trim(); return v === "" ? undefined : parse(v); };
      body.temperature = num("temperature", parseFloat);
      body.top_p = num("top-p", parseFloat);
      body.max_tokens = num("max-tokens", (v) => parseInt(v, 10));
      body.seed = num("seed", (v) => parseInt(v, 10));
      const attention = $("attention").value.trim();
      if (attention) body.attention = attention;
      if ($("json-mode").checked) {
        let schema;
        try {
          schema = JSON.parse($("json-schema").value);
        } catch (e) {
          throw new Error("the JSON schema does not parse: " + e.message);
        }
        body.response_format = { type: "json_schema", json_schema: { name: "playground", schema, strict: true } };
      }
      return body;
    }

    async send() {
      const text = $("prompt").value;
      if (!text.trim() || this.controller) return;
      // The server needs a model name, which only the model list gives: without it nothing is sent.
      if (!$("model").value && !(await this.loadModels())) {
        const hint = this.modelsError.startsWith("401") ? "; enter the API key above" : "";
        return this.status(`no model to ask: the model list did not load (${this.modelsError})${hint}`, true);
      }
      let body;
      this.history.push({ role: "user", content: text });
      try {
        body = this.requestBody();
      } catch (e) {
        this.history.pop();
        return this.status(e.message, true);
      }
      $("prompt").value = "";
      this.bubble("user", text);
      const reply = this.bubble("assistant", "");
      const replyText = reply.querySelector(".text");
      this.controller = new AbortController();
      $("send").disabled = true;
      $("stop").disabled = false;
      this.status("generating…");
      const t0 = performance.now();
      let tFirst = null, usage = null, finish = null;
      try {
        const r = await fetch("/v1/chat/completions", {
          method: "POST", signal: this.controller.signal,
          headers: Object.assign({ "Content-Type": "application/json" }, authHeaders()),
          body: JSON.stringify(body),
        });
        if (!r.ok) throw new Error(await errorText(r));
        await readEvents(r, (chunk) => {
          if (chunk.error) throw new Error(chunk.error.message);
          if (chunk.usage) usage = chunk.usage;
          for (const choice of chunk.choices || []) {
            const piece = choice.delta && choice.delta.content;
            if (piece) {
              if (tFirst === null) tFirst = performance.now();
              replyText.textContent += piece;
              reply.scrollIntoView({ block: "end" });
            }
            // stride's own reason (timeout) says more than OpenAI's "length" for it.
            if (choice.finish_reason) finish = choice.stride_finish_reason || choice.finish_reason;
          }
        });
        this.history.push({ role: "assistant", content: replyText.textContent });
        this.finishBubble(reply, t0, tFirst, usage, finish);
        this.status("done");
      } catch (e) {
        if (e.name === "AbortError") {
          this.history.push({ role: "assistant", content: replyText.textContent });
          this.finishBubble(reply, t0, tFirst, usage, "stopped");
          this.status("stopped");
        } else {
          this.history.pop();
          reply.classList.add("error");
          replyText.textContent = e.message;
          this.status("error", true);
        }
      } finally {
        this.controller = null;
        $("send").disabled = false;
        $("stop").disabled = true;
      }
    }

    finishBubble(reply, t0, tFirst, usage, finish) {
      const meta = document.createElement("span");
      meta.className = "meta";
      const parts = [];
      if (finish) parts.push(finish);
      if (tFirst !== null) parts.push(`first token ${(tFirst - t0).toFixed(0)} ms`);
      if (usage) {
        const secs = (performance.now() - (tFirst === null ? t0 : tFirst)) / 1000;
        parts.push(`${usage.prompt_tokens} prompt (${usage.prompt_tokens_details ? usage.prompt_tokens_details.cached_tokens : 0} cached) + ${usage.completion_tokens} tokens`);
        if (secs > 0 && usage.completion_tokens > 1) parts.push(`${((usage.completion_tokens - 1) / secs).toFixed(1)} tok/s`);
      }
      meta.textContent = parts.join(" · ");
      reply.appendChild(meta);
    }

    stop() {
      if (this.controller) this.controller.abort();
    }

    clear() {
      this.stop();
      this.history = [];
      $("messages").replaceChildren();
      this.status("ready");
    }
  }

  ns.ChatPlayground = ChatPlayground;
  ns.authHeaders = authHeaders;
})(window.stride);
