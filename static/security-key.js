// Security keys (WebAuthn) on the two-factor pages. A form with
// data-options first asks that URL for a challenge (JSON, binary fields as
// base64url), hands it to navigator.credentials, then puts the browser's
// answer (JSON, binary fields as base64url) in the form's credential field
// and submits the form as any other, with its CSRF token.
(function () {
  "use strict";

  function toBuffer(s) {
    var b64 = s.replace(/-/g, "+").replace(/_/g, "/");
    while (b64.length % 4) {
      b64 += "=";
    }
    var bin = atob(b64);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) {
      bytes[i] = bin.charCodeAt(i);
    }
    return bytes.buffer;
  }

  function toBase64url(buf) {
    if (!buf) {
      return null;
    }
    var bytes = new Uint8Array(buf);
    var bin = "";
    for (var i = 0; i < bytes.length; i++) {
      bin += String.fromCharCode(bytes[i]);
    }
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  // descriptors turns the ids of credential descriptors into buffers.
  function descriptors(list) {
    return (list || []).map(function (d) {
      var out = { type: d.type, id: toBuffer(d.id) };
      if (d.transports) {
        out.transports = d.transports;
      }
      return out;
    });
  }

  function creationOptions(pk) {
    pk.challenge = toBuffer(pk.challenge);
    pk.user.id = toBuffer(pk.user.id);
    pk.excludeCredentials = descriptors(pk.excludeCredentials);
    return pk;
  }

  function requestOptions(pk) {
    pk.challenge = toBuffer(pk.challenge);
    pk.allowCredentials = descriptors(pk.allowCredentials);
    return pk;
  }

  // answer is the JSON of a PublicKeyCredential as the server reads it.
  function answer(cred) {
    var r = cred.response;
    var out = {
      id: cred.id,
      rawId: toBase64url(cred.rawId),
      type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
      response: { clientDataJSON: toBase64url(r.clientDataJSON) }
    };
    if (r.attestationObject) {
      out.response.attestationObject = toBase64url(r.attestationObject);
      out.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      out.response.authenticatorData = toBase64url(r.authenticatorData);
      out.response.signature = toBase64url(r.signature);
      out.response.userHandle = toBase64url(r.userHandle);
    }
    return JSON.stringify(out);
  }

  function options(form) {
    var body = new URLSearchParams();
    body.set("csrf", form.elements.csrf.value);
    return fetch(form.getAttribute("data-options"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Accept": "application/json" },
      body: body
    }).then(function (resp) {
      return resp.json().catch(function () {
        throw new Error("The console did not answer as expected. Reload the page and try again.");
      }).then(function (json) {
        if (!resp.ok) {
          throw new Error((json.error && json.error.message) || "The console refused the request.");
        }
        return json;
      });
    });
  }

  function showError(form, message) {
    var box = form.querySelector(".security-key-error");
    box.textContent = message;
    box.hidden = false;
  }

  // What a refusal of the browser means, in words for the person.
  function explain(err) {
    switch (err && err.name) {
      case "NotAllowedError":
        return "The security key did not answer (it was not touched in time, or the request was cancelled). Try again.";
      case "InvalidStateError":
        return "This security key is registered already.";
      case "SecurityError":
        return "Security keys work only at the console's own address (" + location.origin + " is not it).";
    }
    return (err && err.message) || "The security key request failed.";
  }

  function ceremony(form, run) {
    form.addEventListener("submit", function (e) {
      if (form.elements.credential.value !== "") {
        return;
      }
      e.preventDefault();
      if (!window.PublicKeyCredential || !navigator.credentials) {
        showError(form, "This browser does not support security keys.");
        return;
      }
      var button = form.querySelector("button[type=submit]");
      button.disabled = true;
      options(form).then(run).then(function (cred) {
        form.elements.credential.value = answer(cred);
        form.submit();
      }).catch(function (err) {
        button.disabled = false;
        showError(form, explain(err));
      });
    });
  }

  document.querySelectorAll("form.security-key-add").forEach(function (form) {
    ceremony(form, function (opts) {
      return navigator.credentials.create({ publicKey: creationOptions(opts.publicKey) });
    });
  });
  document.querySelectorAll("form.security-key-signin").forEach(function (form) {
    ceremony(form, function (opts) {
      return navigator.credentials.get({ publicKey: requestOptions(opts.publicKey) });
    });
  });
})();
