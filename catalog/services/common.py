"""Write helpers shared by the catalog's services: validate everything, then save."""
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import ProtectedError


def validated_save(instance: models.Model) -> models.Model:
    """Save after full_clean, so field validators and check constraints answer with messages
    (an API 400 or an admin form error) instead of an IntegrityError."""
    instance.full_clean()
    instance.save()
    return instance


def assign(instance: models.Model, data: dict) -> models.Model:
    for name, value in data.items():
        setattr(instance, name, value)
    return instance


def protected_delete(instance: models.Model, *, what: str) -> None:
    """Delete, or explain what still refers to the row (ValidationError -> API 400)."""
    try:
        instance.delete()
    except ProtectedError as exc:
        users = sorted({str(obj._meta.verbose_name_plural) for obj in exc.protected_objects})
        raise ValidationError(f"{what} is still used by {', '.join(users)}; delete or move those first.") from None
